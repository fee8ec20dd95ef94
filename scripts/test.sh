#!/usr/bin/env bash
# Installs dependencies, checks that the sources are formatted (scripts/format.sh --check), builds
# rewire with its tests, runs every test with CTest, then builds the fuzz targets with clang and
# runs each for 20 seconds on its seeds (scripts/fuzz.sh, docs/fuzzing.md; FUZZ_SECONDS=0 skips).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/format.sh --check
bash scripts/build.sh -DREWIRE_BUILD_TESTS=ON
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -j "${JOBS:-$(nproc)}" "$@"
if [ "${FUZZ_SECONDS:-20}" != 0 ]; then bash scripts/fuzz.sh "${FUZZ_SECONDS:-20}"; fi
