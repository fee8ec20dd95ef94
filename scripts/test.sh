#!/usr/bin/env bash
# Installs dependencies, checks that the sources are formatted (scripts/format.sh --check), builds
# rewire with its tests, and runs every test with CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/format.sh --check
bash scripts/build.sh -DREWIRE_BUILD_TESTS=ON
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -j "${JOBS:-$(nproc)}" "$@"
