#!/usr/bin/env bash
# Makes .venv: a Python virtual environment over Debian's /usr/bin/python3 that sees Debian's
# torch, torchvision, onnx and numpy (--system-site-packages) and imports rewire from the build
# (a .pth file naming BUILD_DIR/python). Debian's Python is externally managed, so the package is
# not installed into it; run `.venv/bin/python` (or `source .venv/bin/activate`). scripts/build.sh
# calls this once the package is built. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
package="$(pwd)/$BUILD_DIR/python"
if [ ! -f "$package/rewire/__init__.py" ]; then
  echo "python-env: $package/rewire is not built (scripts/build.sh builds it with pybind11-dev)" >&2
  exit 1
fi
if [ ! -x .venv/bin/python ]; then
  /usr/bin/python3 -m venv --system-site-packages .venv
fi
site=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo "$package" > "$site/rewire.pth"
.venv/bin/python -c 'import rewire, sys; print("python-env: .venv/bin/python imports rewire from", rewire.__file__)'
