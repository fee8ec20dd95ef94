#!/usr/bin/env bash
# Installs dependencies, checks that the sources are formatted (scripts/format.sh --check), builds
# rewire with its tests, runs the tests with CTest, then builds the fuzz targets with clang and
# runs each for 20 seconds on its seeds (scripts/fuzz.sh, docs/fuzzing.md; FUZZ_SECONDS=0 skips),
# printing how long each phase took. The whole ONNX Runtime matrix (CTest label ort_matrix, about
# an hour on 2 cores) is left out: scripts/test-ort-matrix.sh runs it. Extra arguments go to ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
phases=()
phase() {  # phase NAME COMMAND...: runs the command and records its wall time
  local name=$1 start=$SECONDS
  shift
  "$@"
  phases+=("$(printf '%-8s %5d s' "$name" $((SECONDS - start)))")
}
report() {
  echo "test.sh: time per phase"
  printf '  %s\n' "${phases[@]}"
}
trap report EXIT
phase install bash scripts/install-deps.sh
phase format bash scripts/format.sh --check
phase build bash scripts/build.sh -DREWIRE_BUILD_TESTS=ON
phase tests ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -j "${JOBS:-$(nproc)}" \
  -LE ort_matrix "$@"
if [ "${FUZZ_SECONDS:-20}" != 0 ]; then phase fuzz bash scripts/fuzz.sh "${FUZZ_SECONDS:-20}"; fi
