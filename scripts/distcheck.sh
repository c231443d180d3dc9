#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# distcheck.sh: the release tarball is complete and builds anywhere.
#
# Makes the tarball (build-dist/), checks that it holds every file git
# tracks, then runs 'make distcheck' from the unpacked tarball: a VPATH build
# with a read-only source tree, the unit tests, install, uninstall leaving
# nothing, and the tarball made again. As root that runs as 'nobody', since
# root writes into a read-only source tree without noticing.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build="$top/build-dist"

[ -x "$top/configure" ] || (cd "$top" && ./autogen.sh >/dev/null 2>&1)
mkdir -p "$build"
cd "$build"
if [ ! -f Makefile ] || [ "$top/configure" -nt Makefile ]; then
	"$top/configure" -q
fi
rm -f btrfsx-*.tar.gz
make -s dist >/dev/null
tarball=$(ls "$build"/btrfsx-*.tar.gz)
name=$(basename "$tarball" .tar.gz)

if git -C "$top" rev-parse --git-dir >/dev/null 2>&1; then
	missing=$(comm -23 \
		<(git -C "$top" ls-files | grep -v -e '^\.ci/' -e '\.gitignore$' | sort) \
		<(tar tzf "$tarball" | sed "s|^$name/||" | sort))
	if [ -n "$missing" ]; then
		echo "distcheck: tracked files missing from $(basename "$tarball")" \
			"(add them to EXTRA_DIST in their directory's Makemodule.am):" >&2
		echo "$missing" >&2
		exit 1
	fi
fi

scratch=$(mktemp -d /tmp/btrfsx-distcheck.XXXXXX)
trap 'chmod -R u+w "$scratch"; rm -rf "$scratch"' EXIT
chmod 755 "$scratch"
tar xzf "$tarball" -C "$scratch"
as_user=()
if [ "$(id -u)" -eq 0 ]; then
	chown -R nobody:nogroup "$scratch/$name"
	as_user=(setpriv --reuid=nobody --regid=nogroup --clear-groups --reset-env)
fi
cd "$scratch/$name"
if ! "${as_user[@]}" sh -c './configure -q && make -s -j"$(nproc)" distcheck' \
	>"$build/distcheck.log" 2>&1; then
	tail -n 40 "$build/distcheck.log" >&2
	echo "distcheck: failed; the whole log is $build/distcheck.log" >&2
	exit 1
fi
echo "distcheck: $(basename "$tarball") is complete and passes make distcheck"
