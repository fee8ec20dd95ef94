#!/usr/bin/env bash
# Installs dependencies, builds rewire, and runs the default job: a short distributed PPO run on
# SqueezeNet (configs/distributed-local.toml: a supervisor, 2 data-parallel learner ranks and
# 4 env actors on loopback, a few minutes on 2 cores), then the trained policy optimises the
# model (verified against the original, compared with greedy and backtracking search), then the
# run's plots and summary.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
rewire=./build/cli/rewire
config=configs/distributed-local.toml
run=runs/distributed-local
rm -rf "$run"
$rewire launch --config "$config"
$rewire eval --config "$config"
$rewire report --run "$run"
echo "quickstart: optimised graph in $run/optimized/, plots and summary in $run/report/"
