#!/usr/bin/env bash
# Configures and builds rewire into build/ (Release, Ninja). Extra arguments go to CMake's
# configure step; TARGETS="a b" builds only those targets (default: everything configured).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
JOBS=${JOBS:-$(nproc)}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-Release} "$@"
targets=()
for t in ${TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$BUILD_DIR" -j "$JOBS" "${targets[@]}"
# The Python package, when it was built: .venv/bin/python imports it (scripts/python-env.sh).
if [ -f "$BUILD_DIR/python/rewire/__init__.py" ] && [ -z "${TARGETS:-}" ]; then
  BUILD_DIR="$BUILD_DIR" bash scripts/python-env.sh
fi
