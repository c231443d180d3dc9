#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# install-deps.sh [--vm]: installs what building, testing and the demo need
# on Debian 12 (--vm: and what the VM tests need); does nothing when
# everything is already there. Needs root.
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
	# building btrfs-progs 6.19, the second oracle (tests/helpers/progs_619.py)
	libzstd-dev liblzo2-dev libudev-dev
	# the web console application and its real-browser test (tests/test_cockpit.py)
	cockpit-ws cockpit-bridge cockpit-system libjs-d3
	chromium chromium-driver python3-selenium
)
# Services whose packages start them on installation (Debian's postinst does
# where an init system runs): the tests start their own, on their own ports.
DAEMONS=(prometheus prometheus-node-exporter)
# --vm: what the VM tests (tests/vm/) need besides: qemu, a busybox initramfs,
# patch and xz for the btrfs module builds, gcc-12 (the compiler of Debian's
# kernels). No kernel package: tests/vm/kernels.py downloads the guests'
# kernel image, headers and source (apt-get download) and unpacks them in
# its cache, so the host's kernels and boot menu stay as they are. A failure
# here does not stop the suite: the VM tests skip, saying what is missing.
VM_PACKAGES=(qemu-system-x86 busybox-static cpio patch xz-utils gcc-12)

missing() {
	local pkg
	for pkg in "$@"; do
		dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q '^install ok installed$' ||
			echo "$pkg"
	done
}

updated=
install() {
	local keep=() name version policy=/usr/sbin/policy-rc.d made_policy= ret=0
	if [ "$(id -u)" -ne 0 ]; then
		echo "install-deps: run as root to install: $*" >&2
		return 1
	fi
	echo "install-deps: installing $*"
	export DEBIAN_FRONTEND=noninteractive
	# A kernel source already installed keeps its version: apt would upgrade
	# linux-source to satisfy debhelper's recommendations.
	for name in $(dpkg-query -W -f='${Package}\n' 'linux-source-*' 2>/dev/null || true); do
		version=$(dpkg-query -W -f='${Version}' "$name" 2>/dev/null || true)
		[ -z "$version" ] || keep+=("$name=$version")
	done
	# No service may start while installing: invoke-rc.d and deb-systemd-invoke
	# ask policy-rc.d, and 101 means "not now".
	if [ ! -e "$policy" ]; then
		printf '#!/bin/sh\nexit 101\n' > "$policy"
		chmod 755 "$policy"
		made_policy=1
	fi
	[ -n "$updated" ] || apt-get update -qq
	updated=1
	apt-get install -y -qq --no-install-recommends "$@" "${keep[@]}" >/dev/null || ret=$?
	[ -z "$made_policy" ] || rm -f "$policy"
	return $ret
}

mapfile -t need < <(missing "${PACKAGES[@]}")
if [ ${#need[@]} -gt 0 ]; then
	install "${need[@]}"
	# Under systemd the units were enabled for the next boot: not ours to run.
	if [ -d /run/systemd/system ]; then
		for daemon in "${DAEMONS[@]}"; do
			systemctl disable --now "$daemon" >/dev/null 2>&1 || true
		done
	fi
fi
if [ "${1:-}" = --vm ]; then
	mapfile -t need < <(missing "${VM_PACKAGES[@]}")
	if [ ${#need[@]} -gt 0 ] && ! install "${need[@]}"; then
		echo "install-deps: the VM tests will skip: ${need[*]} could not be installed" >&2
	fi
fi
exit 0
