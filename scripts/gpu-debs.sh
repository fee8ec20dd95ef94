#!/usr/bin/env bash
# Downloads the Debian packages rewire needs besides LibTorch into .debs/ (git-ignored), for a
# GPU machine that has PyTorch but no package registry: there, launch/gpu-check.sh unpacks them
# into a sysroot (docs/gpu.md). Run on a development machine.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .debs
cd .debs
packages=(
  # actors: ZeroMQ (+ what libzmq5 loads), cppzmq, libsodium, cereal
  libzmq5 libzmq3-dev cppzmq-dev libsodium23 libsodium-dev libpgm-5.3-0 libnorm1 libbsd0 libmd0
  libcereal-dev
  # LibTorch's c10d headers include gloo's
  libgloo-dev libgloo0
  # configs, CLI, cost cache, compression
  libtomlplusplus-dev libcli11-dev libsqlite3-dev libsqlite3-0 zlib1g-dev
  # ONNX import/export
  libonnx-dev libonnx1 libonnxifi libprotobuf-dev libprotobuf32 libprotobuf-lite32 protobuf-compiler libprotoc32
  # tests
  libgtest-dev libgmock-dev googletest
)
apt-get download "${packages[@]}"
echo "gpu-debs: $(ls ./*.deb | wc -l) packages, $(du -sh . | cut -f1) in .debs/"
