#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Builds the libFuzzer harnesses (if needed) and runs each for a while.
#
#   tests/fuzz/run-fuzzers.sh [options] [SECONDS-PER-HARNESS] [-- LIBFUZZER-ARGS...]
#
# Options:
#   -B, --build-dir DIR  where to build and keep the working corpora
#                        (default: $BTRFSX_FUZZ_BUILD, else <srcdir>/build-fuzz)
#   --cc CC              the compiler (default: $CC if it is clang, else clang-14)
#   --only NAME          run only this harness (repeatable): superblock,
#                        sys_chunk_array, tree_node, item, image or fuzz_<name>
#   --build-only         build, do not run
#   --merge              instead of fuzzing, minimise each harness's seeds
#                        together with what runs found (libFuzzer -merge=1)
#                        and replace tests/fuzz/corpus/<harness>/ with the
#                        result (regress-* files are kept as they are)
#   --no-build           run what is built
#   -j N                 parallel make jobs (default: number of CPUs)
#   -h, --help           this text
#
# SECONDS defaults to 20. The seeds in tests/fuzz/corpus/<harness>/ are only
# read; new inputs go to <build-dir>/corpus/<harness>/, crash inputs to
# <build-dir>/artifacts/<harness>/, the full logs to <build-dir>/logs/.
#
# The source tree may be configured in place (automake then refuses a second,
# out-of-tree configuration of it), so the build uses a mirror of the source
# files in <build-dir>/src, refreshed on each run, and builds in
# <build-dir>/obj: the source tree is never written to.
#
# Exit status: 0 no crash, 1 a harness crashed (or failed to build or
# start), 2 usage, 77 clang with libFuzzer is not available (skip).
set -euo pipefail

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HARNESSES=(fuzz_superblock fuzz_sys_chunk_array fuzz_tree_node fuzz_item fuzz_image fuzz_plan)
declare -A MAX_LEN=([fuzz_superblock]=4096 [fuzz_sys_chunk_array]=4096 [fuzz_tree_node]=16384
	[fuzz_item]=16500 [fuzz_image]=4096 [fuzz_plan]=512)

usage() {
	sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
}

die() {
	echo "run-fuzzers: $*" >&2
	exit 1
}

BUILD=${BTRFSX_FUZZ_BUILD:-$SRC/build-fuzz}
CC_FUZZ=
SECONDS_PER=20
DO_BUILD=1
DO_RUN=1
DO_MERGE=0
JOBS=$(nproc 2>/dev/null || echo 2)
ONLY=()
EXTRA=()

while [ $# -gt 0 ]; do
	case $1 in
	-B|--build-dir) BUILD=$2; shift 2 ;;
	--cc) CC_FUZZ=$2; shift 2 ;;
	--only) ONLY+=("fuzz_${2#fuzz_}"); shift 2 ;;
	--build-only) DO_RUN=0; shift ;;
	--merge) DO_MERGE=1; shift ;;
	--no-build) DO_BUILD=0; shift ;;
	-j) JOBS=$2; shift 2 ;;
	-j*) JOBS=${1#-j}; shift ;;
	-h|--help) usage; exit 0 ;;
	--) shift; EXTRA=("$@"); break ;;
	[0-9]*) SECONDS_PER=$1; shift ;;
	*) echo "run-fuzzers: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
	esac
done
[[ $SECONDS_PER =~ ^[0-9]+$ ]] || { echo "run-fuzzers: bad seconds '$SECONDS_PER'" >&2; exit 2; }
if [ ${#ONLY[@]} -gt 0 ]; then
	for h in "${ONLY[@]}"; do
		[ -n "${MAX_LEN[$h]:-}" ] || { echo "run-fuzzers: no harness '$h'" >&2; exit 2; }
	done
	HARNESSES=("${ONLY[@]}")
fi
mkdir -p "$BUILD"
BUILD=$(cd "$BUILD" && pwd)

if [ -z "$CC_FUZZ" ]; then
	if [ -n "${CC:-}" ] && "$CC" --version 2>/dev/null | grep -q clang; then
		CC_FUZZ=$CC
	else
		CC_FUZZ=clang-14
	fi
fi

# Can this compiler link a libFuzzer harness with the sanitizers?
check_toolchain() {
	local tmp
	command -v "$CC_FUZZ" >/dev/null 2>&1 || {
		echo "run-fuzzers: SKIP: $CC_FUZZ not found (apt-get install clang-14)" >&2
		exit 77
	}
	tmp=$(mktemp -d)
	printf '%s\n' '#include <stddef.h>' '#include <stdint.h>' \
		'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { return 0; }' >"$tmp/t.c"
	if ! "$CC_FUZZ" -fsanitize=fuzzer,address,undefined -o "$tmp/t" "$tmp/t.c" \
			>"$tmp/log" 2>&1; then
		cat "$tmp/log" >&2
		rm -rf "$tmp"
		echo "run-fuzzers: SKIP: $CC_FUZZ cannot link libFuzzer harnesses" \
			"(apt-get install libclang-rt-14-dev)" >&2
		exit 77
	fi
	rm -rf "$tmp"
}

# Copies the source files (what git tracks, plus new files it does not
# ignore) into $BUILD/src. Only the files that differ are copied, and they
# get a new mtime, so make rebuilds exactly what depends on them.
mirror_source() {
	local dst=$BUILD/src f n=0
	mkdir -p "$dst"
	if git -C "$SRC" rev-parse --git-dir >/dev/null 2>&1; then
		while IFS= read -r -d '' f; do
			case $f in tests/fuzz/corpus/*) continue ;; esac
			[ -f "$SRC/$f" ] || continue
			if ! cmp -s "$SRC/$f" "$dst/$f"; then
				mkdir -p "$dst/$(dirname "$f")"
				cp "$SRC/$f" "$dst/$f"
				n=$((n + 1))
			fi
		done < <(git -C "$SRC" ls-files -z -c -o --exclude-standard)
	else
		# A tarball: everything but build products.
		(cd "$SRC" && find . -path ./build-fuzz -prune -o -path ./tests/fuzz/corpus -prune \
			-o -type f ! -name '*.o' ! -name '*.lo' ! -name '*.la' ! -name Makefile \
			! -name config.status ! -name config.log ! -name config.h ! -name libtool \
			! -name stamp-h1 ! -path '*/.libs/*' ! -path '*/.deps/*' -print0) |
		while IFS= read -r -d '' f; do
			if ! cmp -s "$SRC/$f" "$dst/$f"; then
				mkdir -p "$dst/$(dirname "$f")"
				cp "$SRC/$f" "$dst/$f"
			fi
		done
	fi
	[ "$n" -gt 0 ] && echo "run-fuzzers: $n source file(s) refreshed in $dst"
	return 0
}

build() {
	local src=$BUILD/src obj=$BUILD/obj targets=()
	mirror_source
	if [ ! -x "$src/configure" ] || [ ! -f "$src/Makefile.in" ] ||
	   [ "$src/configure.ac" -nt "$src/configure" ]; then
		echo "run-fuzzers: autoreconf in $src"
		(cd "$src" && mkdir -p m4 build-aux &&
			autoreconf --install --force >"$BUILD/autoreconf.log" 2>&1) ||
			{ grep -iE 'error' "$BUILD/autoreconf.log" >&2; die "autoreconf failed in $src"; }
	fi
	mkdir -p "$obj"
	if [ ! -f "$obj/Makefile" ] || [ "$src/configure" -nt "$obj/config.status" ]; then
		echo "run-fuzzers: configuring in $obj (CC=$CC_FUZZ)"
		(cd "$obj" && "$src/configure" -q --enable-fuzzing --enable-sanitizers \
			CC="$CC_FUZZ" >"$BUILD/configure.log" 2>&1) ||
			{ tail -20 "$BUILD/configure.log" >&2; die "configure failed (see $BUILD/configure.log)"; }
	fi
	for h in "${HARNESSES[@]}"; do
		targets+=("tests/fuzz/$h")
	done
	echo "run-fuzzers: building ${targets[*]}"
	make -C "$obj" -j"$JOBS" "${targets[@]}" >"$BUILD/make.log" 2>&1 ||
		{ grep -E 'error|Error' "$BUILD/make.log" | head -30 >&2; die "build failed (see $BUILD/make.log)"; }
}

# The corpus statistics libFuzzer prints with -print_final_stats=1.
stat_of() {
	sed -n "s/^stat::$1: *//p" "$2" | tail -1
}

run_one() {
	local h=$1 bin=$BUILD/obj/tests/fuzz/$1 log=$BUILD/logs/$1.log rc=0
	local work=$BUILD/corpus/$h seeds=$SRC/tests/fuzz/corpus/$h art=$BUILD/artifacts/$h
	local dirs=("$work")
	[ -x "$bin" ] || die "$bin is not built"
	mkdir -p "$work" "$art" "$BUILD/logs"
	[ -d "$seeds" ] && dirs+=("$seeds")
	echo "run-fuzzers: $h for ${SECONDS_PER}s"
	"$bin" -max_total_time="$SECONDS_PER" -max_len="${MAX_LEN[$h]}" -timeout=10 \
		-rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$art/" \
		"${EXTRA[@]}" "${dirs[@]}" >"$log" 2>&1 || rc=$?
	if [ "$rc" -ne 0 ]; then
		echo "run-fuzzers: $h FAILED (exit $rc); log: $log" >&2
		grep -A40 -E '^==[0-9]+==ERROR|runtime error|deadly signal|ERROR: libFuzzer' "$log" |
			head -60 >&2 || tail -40 "$log" >&2
		ls -1 "$art"/* 2>/dev/null | sed 's/^/run-fuzzers: crash input: /' >&2
		return 1
	fi
	printf 'run-fuzzers: %-22s %10s execs %8s exec/s  %5s corpus files  %s cov\n' "$h" \
		"$(stat_of number_of_executed_units "$log")" \
		"$(stat_of average_exec_per_sec "$log")" \
		"$(find "$work" -type f | wc -l)" \
		"$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | cut -d' ' -f2)"
	return 0
}

# Replaces the seeds of @1 by a minimal set covering them and the working
# corpus; the regress-* inputs stay as they are (each replays a fixed bug).
merge_one() {
	local h=$1 bin=$BUILD/obj/tests/fuzz/$1 seeds=$SRC/tests/fuzz/corpus/$1
	local work=$BUILD/corpus/$1 new=$BUILD/merge/$1 log=$BUILD/logs/$1-merge.log
	[ -x "$bin" ] || die "$bin is not built"
	rm -rf "$new"
	mkdir -p "$new" "$work" "$seeds" "$BUILD/logs"
	"$bin" -merge=1 -max_len="${MAX_LEN[$h]}" -timeout=30 -rss_limit_mb=4096 \
		"$new" "$seeds" "$work" >"$log" 2>&1 ||
		{ tail -20 "$log" >&2; die "$h: merge failed (see $log)"; }
	find "$seeds" -maxdepth 1 -type f ! -name 'regress-*' -delete
	cp "$new"/* "$seeds"/ 2>/dev/null || true
	printf 'run-fuzzers: %-22s %5s seed files, %s bytes\n' "$h" \
		"$(find "$seeds" -type f | wc -l)" "$(cat "$seeds"/* 2>/dev/null | wc -c)"
}

check_toolchain
[ "$DO_BUILD" -eq 1 ] && build
if [ "$DO_MERGE" -eq 1 ]; then
	for h in "${HARNESSES[@]}"; do
		merge_one "$h"
	done
	exit 0
fi
[ "$DO_RUN" -eq 1 ] || exit 0
failed=0
for h in "${HARNESSES[@]}"; do
	run_one "$h" || failed=1
done
exit $failed
