#!/bin/bash
# build.sh <dir> [configure options]: an out-of-tree build in <dir>.
set -euo pipefail
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
