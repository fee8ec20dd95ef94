#!/usr/bin/env bash
# Installs dependencies, builds rewire, and runs the default job on a built-in model.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
./build/launch/rewire models
./build/launch/rewire rules verify | tail -n 1
./build/launch/rewire optimize --model bert --search backtrack --budget 50 \
  --out build/bert.opt.onnx --report build/bert.opt.json
