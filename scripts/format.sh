#!/usr/bin/env bash
# Formats every C++ and CUDA source in the repository with clang-format (.clang-format), or with
# --check lists the files that differ from it and exits 1 (scripts/test.sh runs the check).
set -euo pipefail
cd "$(dirname "$0")/.."
CLANG_FORMAT=${CLANG_FORMAT:-clang-format}
if ! command -v "$CLANG_FORMAT" >/dev/null 2>&1; then
  echo "format: $CLANG_FORMAT not found; install Debian's clang-format (scripts/install-deps.sh does)" >&2
  exit 2
fi
mapfile -t files < <(git ls-files '*.cc' '*.h' '*.cu' '*.cuh')
if [ "${1:-}" = "--check" ]; then
  bad=()
  for f in "${files[@]}"; do
    if ! "$CLANG_FORMAT" --dry-run --Werror "$f" >/dev/null 2>&1; then bad+=("$f"); fi
  done
  if [ ${#bad[@]} -gt 0 ]; then
    echo "format: ${#bad[@]} of ${#files[@]} files differ from .clang-format:" >&2
    printf '  %s\n' "${bad[@]}" >&2
    echo "format: run 'bash scripts/format.sh' to format them" >&2
    exit 1
  fi
  echo "format: all ${#files[@]} files match .clang-format"
else
  "$CLANG_FORMAT" -i "${files[@]}"
  echo "format: formatted ${#files[@]} files"
fi
