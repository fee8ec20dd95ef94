#!/usr/bin/env bash
# Installs every Debian 12 package rewire needs to build, test and run, and ONNX Runtime (the
# npm package onnxruntime-node, CPU only, pinned by tools/ort/package-lock.json) into
# tools/ort/node_modules for `rewire optimize --runtime ort`.
# Idempotent: safe to run again; packages already present are left alone.
set -euo pipefail

packages=(
  # toolchain
  build-essential cmake ninja-build pkg-config git clang-format ca-certificates
  # fuzzing (libFuzzer ships with clang's runtime)
  clang-14 libclang-rt-14-dev
  # libraries
  libtorch-dev libgloo-dev libopenblas0-pthread
  libonnx-dev libprotobuf-dev protobuf-compiler
  # ONNX's backend test data (the conformance suite, `rewire conformance`)
  libonnx-testdata
  libpng-dev
  libzmq3-dev cppzmq-dev libcereal-dev libtomlplusplus-dev libsodium-dev
  libsqlite3-dev libcli11-dev libfmt-dev zlib1g-dev nlohmann-json3-dev
  # the extraction ILP of --search eqsat (COIN-OR CBC)
  coinor-libcbc-dev
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  # test-time reference models and checkers (for /usr/bin/python3)
  python3 python3-numpy python3-torch python3-torchvision python3-onnx
  # the Python package (python/: a pybind11 module) and the .venv that sees Debian's torch and onnx
  pybind11-dev python3-dev python3-venv
  # DOT -> PNG
  graphviz
  # peak memory of the large-model check (scripts/large_model_check.py: GNU time -v)
  time
)

# Node.js runs ONNX Runtime (tools/ort/runner.js); Debian's nodejs/npm unless a node is on PATH.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  packages+=(nodejs npm)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages already installed"
else
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  echo "install-deps: installing ${#missing[@]} packages: ${missing[*]}"
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# ONNX Runtime: the CPU library ships inside the npm package; the CUDA download of its
# postinstall script is skipped. `npm ci` installs exactly what package-lock.json pins.
ort_dir="$(cd "$(dirname "$0")/.." && pwd)/tools/ort"
want=$(node -p "require('$ort_dir/package-lock.json').packages['node_modules/onnxruntime-node'].version")
have=$(node -p "try { require('$ort_dir/node_modules/onnxruntime-node/package.json').version } catch (e) { '' }")
if [ "$have" = "$want" ]; then
  echo "install-deps: onnxruntime-node $have already installed in tools/ort"
else
  echo "install-deps: installing onnxruntime-node $want into tools/ort"
  (cd "$ort_dir" && ONNXRUNTIME_NODE_INSTALL_CUDA=skip ONNXRUNTIME_NODE_INSTALL=skip \
     npm ci --no-audit --no-fund --loglevel=error)
fi
node -e "require('$ort_dir/node_modules/onnxruntime-node')" ||
  { echo "install-deps: onnxruntime-node does not load" >&2; exit 1; }
