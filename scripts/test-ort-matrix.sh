#!/usr/bin/env bash
# The whole ONNX Runtime matrix: every zoo model and every torchvision export of
# docs/onnx_coverage.md, optimised with each CPU cost model, judged and run in ONNX Runtime and
# matched against the reference executor (CTest label ort_matrix; about an hour on 2 cores). Run
# it before regenerating the docs tables. Builds first, like scripts/test.sh (without the
# install and format steps); extra arguments go to ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
bash scripts/build.sh -DREWIRE_BUILD_TESTS=ON
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -j "${JOBS:-$(nproc)}" -L ort_matrix "$@"
echo "test-ort-matrix.sh: $((SECONDS - start)) s"
