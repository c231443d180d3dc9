#!/bin/bash
# Installs what building, testing and the demo need on Debian 12; does
# nothing when everything is already there. Needs root.
set -euo pipefail

PACKAGES=(
	build-essential autoconf automake libtool pkg-config
	libblkid-dev uuid-dev libudev-dev libjson-c-dev libisal-dev libxxhash-dev
	libssl-dev libsodium-dev liburing-dev libbtrfsutil-dev zlib1g-dev
	clang-14 libclang-rt-14-dev asciidoctor
	btrfs-progs util-linux e2fsprogs xfsprogs attr fio
	python3 python3-pytest python3-dev python3-setuptools python3-pip python3-wheel
)

missing=()
for pkg in "${PACKAGES[@]}"; do
	dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" ||
		missing+=("$pkg")
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
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
