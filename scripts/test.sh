#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The whole test suite: dependencies, a sanitizer build (clang, ASan+UBSan),
# the C unit tests, the pytest suite against real loop devices (root) and in
# qemu guests with patched kernels (tests/vm/, beside the host tests), then
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
# The guests (tests/vm) run beside the host tests, in a pytest of their own:
# a TCG guest keeps a core busy while most host tests wait on loop devices
# and the kernel, so the two together take little more than the guests
# alone. Their output follows the host tests'. Each run prints its slowest
# tests: what to look at when the suite nears its budget (40 minutes).
status=0
vm_log="$build/vm-tests.log"
# setsid: its own process group, so an interrupted suite stops its guests too
setsid python3 -m pytest -q -p no:cacheprovider --durations=25 tests/vm >"$vm_log" 2>&1 &
vm_pid=$!
trap 'kill -TERM -- -$vm_pid 2>/dev/null' EXIT
python3 -m pytest -q -p no:cacheprovider --durations=25 --ignore=tests/vm tests || status=$?
wait $vm_pid || status=$?
trap - EXIT
echo "---- tests/vm (run beside the host tests) ----"
cat "$vm_log"
"$top/scripts/distcheck.sh" || status=1
exit $status
