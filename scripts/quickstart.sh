#!/usr/bin/env bash
# Installs dependencies, builds the rewire binary (not the tests), and runs the default job: a
# distributed PPO run on X-RLflow's BERT with the rules rewire ships (configs/distributed-local.toml:
# a supervisor, 2 data-parallel learner ranks and 4 env actors on loopback, about 2 minutes on
# 2 cores), then `rewire eval` optimises the model with the trained policy and puts it beside
# greedy, backtracking and equality saturation, each result verified against the input,
# predicted by the kernel model (configs/cost) and measured end to end in ONNX Runtime; then the run's plots
# and summary. Prints the time the job took, install and build aside.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
TARGETS=rewire bash scripts/build.sh -DREWIRE_BUILD_TESTS=OFF
rewire=./build/cli/rewire
config=configs/distributed-local.toml
run=runs/distributed-local
start=$SECONDS
rm -rf "$run"
$rewire launch --config "$config"
$rewire eval --config "$config"
$rewire report --run "$run"
echo "quickstart: the job took $((SECONDS - start)) s; optimised graph in $run/optimized/," \
  "plots and summary in $run/report/summary.md"
