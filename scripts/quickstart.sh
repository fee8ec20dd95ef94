#!/usr/bin/env bash
# Installs dependencies, builds rewire, and runs the default job on a built-in model.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
./build/launch/rewire models
./build/launch/rewire show --model bert --dot build/bert.dot
