#!/usr/bin/env bash
# Installs dependencies, builds rewire, and runs the default job: a short PPO training run on
# SqueezeNet (configs/quickstart.toml, one CPU core, a minute or two), then the trained policy
# optimises the model (verified against the original, compared with greedy and backtracking
# search), then the run's plots and summary.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
rewire=./build/launch/rewire
run=runs/quickstart
rm -rf "$run"
$rewire train --config configs/quickstart.toml
$rewire eval --config configs/quickstart.toml
$rewire report --run "$run"
echo "quickstart: optimised graph in $run/optimized/, plots and summary in $run/report/"
