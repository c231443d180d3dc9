#!/bin/bash
# The whole test suite: dependencies, a sanitizer build (clang, ASan+UBSan),
# the C unit tests, the pytest suite against real loop devices (root) and in
# qemu guests with patched kernels (tests/vm/), then
# the release tarball (scripts/distcheck.sh). Arguments go to pytest and run
# only those tests, without the tarball check.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/install-deps.sh" --vm
build="$top/build-test"
"$top/scripts/build.sh" "$build" --enable-sanitizers --enable-fault-injection CC=clang-14
make -s -C "$build" check
export BTRFSX="$build/btrfsx"
export BTRFSX_BUILD_DIR="$build"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
cd "$top"
if [ $# -gt 0 ]; then
	# Paths name the tests to run; without one, options (-k, -m) select from all.
	where=tests
	for arg in "$@"; do
		[ -e "${arg%%::*}" ] && where=
	done
	exec python3 -m pytest -q -p no:cacheprovider $where "$@"
fi
status=0
# the slowest tests at the end: what to look at when the suite nears its budget
python3 -m pytest -q -p no:cacheprovider --durations=40 tests || status=$?
"$top/scripts/distcheck.sh" || status=1
exit $status
