#!/bin/bash
# install-deps.sh [--vm]: installs what building, testing and the demo need
# on Debian 12 (--vm: and the VM tests); does nothing when everything is
# already there. Needs root.
set -euo pipefail

PACKAGES=(
	build-essential autoconf automake libtool pkg-config
	libblkid-dev uuid-dev libjson-c-dev libisal-dev libxxhash-dev
	libssl-dev libsodium-dev liburing-dev zlib1g-dev libsqlite3-dev
	clang-14 libclang-rt-14-dev asciidoctor
	btrfs-progs util-linux e2fsprogs xfsprogs attr fio
	python3 python3-pytest python3-dev python3-setuptools python3-pip python3-wheel
	python3-prometheus-client python3-jsonschema
	prometheus prometheus-node-exporter
	debhelper dh-python lintian
)
# Services whose packages start them on installation (Debian's postinst does
# where an init system runs): the tests start their own, on their own ports.
DAEMONS=(prometheus prometheus-node-exporter)
# --vm: also what the VM tests (tests/vm/) need: qemu, a busybox initramfs,
# and what building btrfs.ko for Debian's 6.1 cloud kernel needs. The source
# is pinned to the kernel image's version (tests/vm/vmharness.py fetches the
# image itself).
if [ "${1:-}" = --vm ]; then
	PACKAGES+=(
		qemu-system-x86 busybox-static cpio patch xz-utils
		linux-headers-6.1.0-50-cloud-amd64 linux-source-6.1=6.1.176-1
	)
fi

missing=()
for pkg in "${PACKAGES[@]}"; do
	name=${pkg%%=*}
	want=${pkg#"$name"}
	want=${want#=}
	status=$(dpkg-query -W -f='${Status} ${Version}' "$name" 2>/dev/null || true)
	case "$status" in
	"install ok installed ${want}"*) ;;
	*) missing+=("$pkg") ;;
	esac
done
if [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: run as root to install: ${missing[*]}" >&2
	exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# Pinned packages already installed keep their version: apt would upgrade
# linux-source to satisfy debhelper's recommendations, and the VM harness
# builds its modules from the pinned one.
keep=()
for name in linux-source-6.1; do
	version=$(dpkg-query -W -f='${Version}' "$name" 2>/dev/null || true)
	if [ -n "$version" ] && [[ " ${missing[*]} " != *" $name="* ]]; then
		keep+=("$name=$version")
	fi
done
# No service may start while installing: invoke-rc.d and deb-systemd-invoke
# ask policy-rc.d, and 101 means "not now".
policy=/usr/sbin/policy-rc.d
made_policy=
if [ ! -e "$policy" ]; then
	printf '#!/bin/sh\nexit 101\n' > "$policy"
	chmod 755 "$policy"
	made_policy=1
fi
trap '[ -z "$made_policy" ] || rm -f "$policy"' EXIT
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" "${keep[@]}" >/dev/null
# Under systemd the units were enabled for the next boot: not ours to run.
if [ -d /run/systemd/system ]; then
	for daemon in "${DAEMONS[@]}"; do
		systemctl disable --now "$daemon" >/dev/null 2>&1 || true
	done
fi
