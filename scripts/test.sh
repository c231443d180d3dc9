#!/bin/bash
# The whole test suite: dependencies, a sanitizer build (clang, ASan+UBSan),
# the C unit tests, then the pytest suite against real loop devices (root).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/install-deps.sh"
build="$top/build-test"
"$top/scripts/build.sh" "$build" --enable-sanitizers CC=clang-14
make -s -C "$build" check
export BTRFSX="$build/btrfsx"
export BTRFSX_BUILD_DIR="$build"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
cd "$top"
exec python3 -m pytest -q -p no:cacheprovider tests "$@"
