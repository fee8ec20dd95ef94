#!/usr/bin/env bash
# Builds the libFuzzer targets (clang-14, ASan + UBSan) into build-fuzz/, writes their seed
# corpora from the shipped files and runs each target for SECONDS (default 20) under CTest; a
# crash, a leak, a sanitizer report or a broken round trip fails it (docs/fuzzing.md).
# scripts/test.sh runs it with the default after the unit tests.
#
#   bash scripts/fuzz.sh [SECONDS]
#
# The seeds need a normal build with tests in BUILD_DIR (default build/: its `rewire` and
# make_message_seeds). What the runs find stays in build-fuzz/corpus/ (the next run starts
# from it); a crashing input is written to build-fuzz/crashes/.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
FUZZ_DIR=${FUZZ_BUILD_DIR:-build-fuzz}
JOBS=${JOBS:-$(nproc)}
RUN_SECONDS=${1:-20}

start=$(date +%s)
mkdir -p "$FUZZ_DIR"
CC=${FUZZ_CC:-clang-14} CXX=${FUZZ_CXX:-clang++-14} cmake -S . -B "$FUZZ_DIR" -G Ninja \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DREWIRE_BUILD_TESTS=OFF -DREWIRE_BUILD_FUZZERS=ON \
  -DREWIRE_FUZZ_SECONDS="$RUN_SECONDS" >"$FUZZ_DIR/configure.log" 2>&1 ||
  { cat "$FUZZ_DIR/configure.log" >&2; exit 1; }
cmake --build "$FUZZ_DIR" -j "$JOBS" --target fuzzers
cmake --build "$BUILD_DIR" -j "$JOBS" --target rewire make_message_seeds
built=$(date +%s)
/usr/bin/python3 tests/fuzz/make_seed_corpus.py "$BUILD_DIR" "$FUZZ_DIR/seeds"
status=0
ctest --test-dir "$FUZZ_DIR" --output-on-failure -j "$JOBS" || status=$?
# libFuzzer's last status line per target: executions, coverage (cov), features (ft), corpus.
grep -E 'Test: fuzz_[a-z]|^#[0-9]+[[:space:]]+DONE' "$FUZZ_DIR/Testing/Temporary/LastTest.log" |
  grep -v 'fuzz_dirs' || true
echo "fuzz: built in $((built - start)) s, ran in $(($(date +%s) - built)) s"
exit $status
