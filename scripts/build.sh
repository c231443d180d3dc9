#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# build.sh <dir> [configure options]: an out-of-tree build in <dir>.
set -euo pipefail
if [ $# -eq 0 ] || [ "$1" = -h ] || [ "$1" = --help ]; then
	echo "usage: scripts/build.sh <dir> [configure options]   (e.g. build CC=gcc)" >&2
	[ $# -gt 0 ] && exit 0
	exit 2
fi
top=$(cd "$(dirname "$0")/.." && pwd)
dir=$1
shift
[ -x "$top/configure" ] || (cd "$top" && ./autogen.sh >/dev/null 2>&1)
mkdir -p "$dir"
cd "$dir"
if [ ! -f Makefile ] || [ "$top/configure" -nt Makefile ]; then
	"$top/configure" -q "$@"
fi
make -s -j"$(nproc)"
