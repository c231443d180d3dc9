#!/bin/bash
# The demo: builds btrfsx, makes a three-device filesystem from image files,
# writes files through the kernel and looks at it with btrfsx. Needs root and
# no existing disks; cleans up after itself.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/install-deps.sh"
"$top/scripts/build.sh" "$top/build"
btrfsx="$top/build/btrfsx"

work=$(mktemp -d /tmp/btrfsx-demo.XXXXXX)
loops=()
cleanup() {
	mountpoint -q "$work/mnt" && umount "$work/mnt"
	for l in "${loops[@]}"; do losetup -d "$l"; done
	rm -rf "$work"
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
mkdir "$work/mnt"
mount "${loops[0]}" "$work/mnt"
head -c 64M /dev/urandom >"$work/mnt/big"
mkdir "$work/mnt/etc" && cp /etc/os-release /etc/hostname "$work/mnt/etc/"
sha256sum "$work/mnt/big" | cut -d' ' -f1 >"$work/big.sha256"
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

step "done; cleaning up"
