#!/usr/bin/env bash
# Installs every Debian 12 package rewire needs to build, test and run.
# Idempotent: safe to run again; packages already present are left alone.
set -euo pipefail

packages=(
  # toolchain
  build-essential cmake ninja-build pkg-config git
  # fuzzing (libFuzzer ships with clang's runtime)
  clang-14 libclang-rt-14-dev
  # libraries
  libtorch-dev libgloo-dev libopenblas0-pthread
  libonnx-dev libprotobuf-dev protobuf-compiler
  libzmq3-dev cppzmq-dev libcereal-dev libtomlplusplus-dev libsodium-dev
  libsqlite3-dev libcli11-dev libfmt-dev zlib1g-dev
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  # test-time reference models and checkers (for /usr/bin/python3)
  python3 python3-numpy python3-torch python3-torchvision python3-onnx
  # DOT -> PNG
  graphviz
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages already installed"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
echo "install-deps: installing ${#missing[@]} packages: ${missing[*]}"
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
