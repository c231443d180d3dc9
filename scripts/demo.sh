#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The demo: builds btrfsx, makes a three-device filesystem from image files,
# writes files through the kernel, looks at it with btrfsx, scrubs a damaged
# copy back to health and runs a Python example. Needs root and
# no existing disks; cleans up after itself, the state the scrubs record
# included. BTRFSX_DEMO_BUILD=<dir>: use that configured build (the test
# suite's) instead of building build/.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BTRFSX_DEMO_BUILD:-$top/build}
if [ -z "${BTRFSX_DEMO_BUILD:-}" ]; then
	"$top/scripts/install-deps.sh"
	"$top/scripts/build.sh" "$build"
fi
btrfsx="$build/btrfsx"

work=$(mktemp -d /tmp/btrfsx-demo.XXXXXX)
# btrfsx's offline scrub records its result for 'scrub status' in the state
# directory: the demo's own, which goes with it.
export BTRFSX_STATE_DIR="$work/state"
loops=()
fsid=
cleanup() {
	mountpoint -q "$work/mnt" && umount "$work/mnt"
	for l in "${loops[@]}"; do losetup -d "$l"; done
	rm -rf "$work"
	# The kernel's scrub (btrfs scrub start) records its status there.
	[ -z "$fsid" ] || rm -f "/var/lib/btrfs/scrub.status.$fsid" "/var/lib/btrfs/scrub.progress.$fsid"
}
trap cleanup EXIT
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "three image files (1, 2 and 3 GiB) on loop devices"
for size in 1G 2G 3G; do
	truncate -s "$size" "$work/disk$size.img"
	loops+=("$(losetup -f --show "$work/disk$size.img")")
done
echo "${loops[@]}"

step "mkfs.btrfs -d raid1 -m raid1, files written through the kernel"
mkfs.btrfs -q -f -d raid1 -m raid1 "${loops[@]}"
fsid=$(blkid -s UUID -o value "${loops[0]}")
mkdir "$work/mnt"
mount "${loops[0]}" "$work/mnt"
head -c 64M /dev/urandom >"$work/mnt/big"
mkdir "$work/mnt/etc" && cp /etc/os-release /etc/hostname "$work/mnt/etc/"
sha256sum "$work/mnt/big" | cut -d' ' -f1 >"$work/big.sha256"
sync
# The file's first block: its btrfs logical address (FIEMAP gives logical addresses).
big_logical=$(( $(filefrag -v "$work/mnt/big" | awk '$1 == "0:" { sub(/\.\./, "", $4); print $4 }') * 4096 ))
umount "$work/mnt"

step "allocation hints, set offline: metadata on the small device, data on the others"
"$btrfsx" device property set "${loops[0]}" allocation_hint metadata_preferred
"$btrfsx" device property set "${loops[2]}" allocation_hint data_only
"$btrfsx" filesystem show "${loops[0]}"
echo "-- a second data_only device would leave raid1 metadata one device short:"
"$btrfsx" device property set "${loops[1]}" allocation_hint data_only || true
echo "(btrfs-progs agrees: $(btrfs inspect-internal dump-super "${loops[2]}" | grep dev_item.type))"

step "mounted: this kernel has no hint support, and btrfsx says so"
mount "${loops[0]}" "$work/mnt"
"$btrfsx" property get "${loops[2]}" allocation_hint || true
"$btrfsx" read-policy get "$work/mnt" || true
umount "$work/mnt"

step "btrfsx inspect dump-super ${loops[1]}"
"$btrfsx" inspect dump-super "${loops[1]}" | head -20

step "btrfsx inspect dump-tree -t chunk (the chunk tree, read by btrfsx)"
"$btrfsx" inspect dump-tree -t chunk "${loops[0]}" | head -24

step "btrfsx --format json inspect dump-tree -t dev: JSON for scripts"
"$btrfsx" --format json inspect dump-tree -t dev "${loops[0]}" |
	python3 -c 'import json,sys; d=json.load(sys.stdin)
for b in d["trees"][0]["blocks"]:
    for i in b["items"]:
        if i["type_name"] == "DEV_EXTENT":
            print("devid", i["key"]["objectid"], "extent at", i["key"]["offset"], "length", i["length"])'

step "read a file back through btrfsx's own chunk mapping, from each raid1 copy"
want=$(cat "$work/big.sha256")
for mirror in 1 2; do
	sum=$("$btrfsx" inspect read-file --mirror $mirror big "${loops[0]}" | sha256sum | cut -d' ' -f1)
	verdict="DIFFERS from what the kernel wrote"
	[ "$sum" = "$want" ] && verdict="same as what the kernel wrote"
	echo "mirror $mirror: $sum ($verdict)"
done

step "btrfsx filesystem usage: space by allocation preference, free space that honours the hints"
"$btrfsx" filesystem usage "${loops[0]}"

step "offline scrub: one copy of a block of 'big' damaged; -r finds it, a second run repairs it"
read -r copy_dev copy_physical < <(btrfs-map-logical -l "$big_logical" -b 4096 "${loops[0]}" |
	awk '/^mirror 2 / { print $NF, $6 }')
dd if=/dev/urandom of="$copy_dev" bs=4096 count=1 seek=$((copy_physical / 4096)) \
	oflag=direct conv=notrunc status=none
echo "damaged mirror 2 of logical $big_logical: $copy_dev at $copy_physical"
"$btrfsx" scrub start --offline -B -r --no-progress "${loops[@]}" || echo "(exit $?)"
"$btrfsx" scrub start --offline -B --no-progress "${loops[@]}"
mount "${loops[0]}" "$work/mnt"
echo "-- the kernel's scrub agrees:"
btrfs scrub start -B "$work/mnt" | grep -E "Error summary|Total to scrub"
umount "$work/mnt"

step "for scripts: the Python module (examples/metadata-room-alert, a cron check)"
python=$(sed -n 's/^PYTHON = //p' "$build/Makefile")
PYTHONPATH="$build/libbtrfsx/python" "${python:-python3}" "$top/examples/metadata-room-alert" \
	"${loops[@]}" || true

step "done; cleaning up"
