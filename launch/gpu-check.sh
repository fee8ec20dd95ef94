#!/usr/bin/env bash
# The GPU path of rewire, checked on a GPU machine in one go (docs/gpu.md):
#   build    configure and build against the CUDA LibTorch of the installed PyTorch, with
#            -DCMAKE_CUDA_ARCHITECTURES (90: Hopper), Debian's other libraries from .debs
#            unpacked into a sysroot (never into /)
#   test     the CUDA tests (cuda cost model, CUDA executor against the CPU reference, CUDA
#            Graphs, NCCL, the policy on the GPU), then optionally every test
#   ops      per-operator costs of every zoo model with the cuda cost model (cuDNN, cuBLASLt,
#            own kernels; CUDA events), next to the analytic estimate
#   latency  every zoo model optimised (greedy search on the analytic model), then the input
#            and the result timed end to end on the GPU - eager and as CUDA Graph replays -
#            next to what the analytic and the cuda cost models predicted; the GPU outputs of
#            both graphs checked against the CPU reference executor
#   learner  PPO learner samples/s with the policy and Adam on the GPU against the CPU
#   report   every figure in OUT/gpu-check.md (and the JSON it was made from under OUT/)
#
# Usage: launch/gpu-check.sh OUT_DIR [options]
#   --phases LIST      comma-separated subset of build,test,ops,latency,learner,report
#                      (default: all of them, in that order)
#   --models "A B"     zoo models (default: every model `rewire models` lists)
#   --arch N           CMAKE_CUDA_ARCHITECTURES (default 90)
#   --build-dir DIR    (default build-gpu)
#   --sysroot DIR      where .debs are unpacked (default /tmp/sysroot)
#   --latency-runs N   timed end-to-end runs per graph (default 20)
#   --budget N         greedy search budget per model (default 300)
#   --all-tests        the test phase also runs every other test
# Phases can run in separate invocations (e.g. separate 10-minute device calls) with the same
# OUT_DIR and build dir; `report` summarises whatever the others left in OUT_DIR.
set -euo pipefail

die() { echo "gpu-check: $*" >&2; exit 1; }
log() { echo "gpu-check: $*" >&2; }

[ $# -ge 1 ] || die "usage: launch/gpu-check.sh OUT_DIR [--phases LIST] [--models \"A B\"] [--arch N] ..."
OUT=$1
shift
PHASES=build,test,ops,latency,learner,report
MODELS=""
ARCH=90
BUILD_DIR=build-gpu
SYSROOT=/tmp/sysroot
LATENCY_RUNS=20
BUDGET=300
ALL_TESTS=0
while [ $# -gt 0 ]; do
  case "$1" in
    --phases) PHASES=$2; shift 2 ;;
    --models) MODELS=$2; shift 2 ;;
    --arch) ARCH=$2; shift 2 ;;
    --build-dir) BUILD_DIR=$2; shift 2 ;;
    --sysroot) SYSROOT=$2; shift 2 ;;
    --latency-runs) LATENCY_RUNS=$2; shift 2 ;;
    --budget) BUDGET=$2; shift 2 ;;
    --all-tests) ALL_TESTS=1; shift ;;
    *) die "unknown option $1" ;;
  esac
done

cd "$(dirname "$0")/.."
ROOT=$PWD
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
mkdir -p "$OUT/logs" "$OUT/ops" "$OUT/optimize" "$OUT/learner"
has_phase() { [[ ",$PHASES," == *",$1,"* ]]; }

# ------------------------------------------------------------------------------- environment

# Debian's packages travel as .debs (docs/gpu.md): unpack them once into the sysroot.
if [ -d .debs ] && ls .debs/*.deb > /dev/null 2>&1; then
  if [ ! -f "$SYSROOT/.rewire-unpacked" ]; then
    log "unpacking $(ls .debs/*.deb | wc -l) .debs into $SYSROOT"
    mkdir -p "$SYSROOT"
    for f in .debs/*.deb; do dpkg -x "$f" "$SYSROOT"; done
    touch "$SYSROOT/.rewire-unpacked"
  fi
fi
MULTIARCH=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
SYSLIB="$SYSROOT/usr/lib/$MULTIARCH"

PYTHON=${PYTHON:-python3}
# The CUDA LibTorch is the installed PyTorch's (the build phase needs it; the others only use its
# CUDA libraries when present).
TORCH_PREFIX=$("$PYTHON" -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null || true)
TORCH_LIB=$("$PYTHON" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))' 2>/dev/null || true)
TORCH_INFO=$("$PYTHON" -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda, "available", torch.cuda.is_available())' 2>/dev/null || echo "no PyTorch")
log "PyTorch: $TORCH_INFO${TORCH_PREFIX:+ ($TORCH_PREFIX)}"
# PyTorch's CUDA libraries (cuBLAS, cuDNN, NCCL, cudart wheels) first, so that one copy of each
# soname is loaded, the one LibTorch was built with; then the sysroot's Debian libraries.
NVIDIA_LIBS=$("$PYTHON" - 2>/dev/null <<'PY' || true
import glob, os, torch
site = os.path.dirname(os.path.dirname(torch.__file__))
print(":".join(sorted(set(glob.glob(os.path.join(site, "nvidia", "*", "lib")) +
                          glob.glob(os.path.join(site, "nvidia", "cu*", "lib"))))))
PY
)
RUNTIME_LIBS="${TORCH_LIB:+$TORCH_LIB:}${NVIDIA_LIBS:+$NVIDIA_LIBS:}/usr/local/cuda/lib64"
[ -d "$SYSLIB" ] && RUNTIME_LIBS="$RUNTIME_LIBS:$SYSLIB"
# Only rewire's own processes see these libraries (python keeps the machine's).
with_libs() { LD_LIBRARY_PATH="$RUNTIME_LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$@"; }
# FP32 everywhere: no TF32 in cuBLAS or cuDNN, whatever a library's default.
export NVIDIA_TF32_OVERRIDE=0

REWIRE="$ROOT/$BUILD_DIR/cli/rewire"
nvidia-smi > "$OUT/logs/nvidia-smi.txt" 2>&1 || true
GPU_NAME=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 || true)
case "$GPU_NAME" in
  *H200*) PROFILE=h200 ;;
  *) PROFILE=h100 ;;
esac
log "GPU: ${GPU_NAME:-unknown}; analytic profile $PROFILE"

# ------------------------------------------------------------------------------- build

if has_phase build; then
  [ -n "$TORCH_PREFIX" ] || die "no PyTorch for $PYTHON (the CUDA LibTorch comes from an installed PyTorch)"
  prefix="$TORCH_PREFIX"
  [ -d "$SYSROOT/usr" ] && prefix="$prefix;$SYSROOT/usr"
  # Headers from the sysroot are searched after LibTorch's (as -isystem, last); its libraries
  # resolve the transitive dependencies at link time.
  export CPLUS_INCLUDE_PATH="$SYSROOT/usr/include${CPLUS_INCLUDE_PATH:+:$CPLUS_INCLUDE_PATH}"
  export C_INCLUDE_PATH="$SYSROOT/usr/include${C_INCLUDE_PATH:+:$C_INCLUDE_PATH}"
  export PKG_CONFIG_SYSROOT_DIR="$SYSROOT"
  export PKG_CONFIG_LIBDIR="$SYSLIB/pkgconfig:$SYSROOT/usr/share/pkgconfig"
  log "configuring $BUILD_DIR (CUDA architectures $ARCH)"
  with_libs cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CUDA_ARCHITECTURES="$ARCH" -DREWIRE_CUDA=ON \
    -DREWIRE_BUILD_TESTS=ON -DREWIRE_PYTHON="$(command -v "$PYTHON")" \
    -DCMAKE_EXE_LINKER_FLAGS="-Wl,-rpath-link,$SYSLIB" \
    > "$OUT/logs/configure.log" 2>&1 || { tail -40 "$OUT/logs/configure.log"; die "configure failed"; }
  grep -q "LibTorch with CUDA: ON" "$OUT/logs/configure.log" ||
    die "CMake did not find a CUDA LibTorch (see $OUT/logs/configure.log)"
  log "building"
  with_libs cmake --build "$BUILD_DIR" -j "$(nproc)" > "$OUT/logs/build.log" 2>&1 ||
    { grep -m 20 -B2 -A6 "error" "$OUT/logs/build.log" || tail -40 "$OUT/logs/build.log"; die "build failed"; }
  if with_libs ldd "$REWIRE" | grep "not found" > "$OUT/logs/ldd-missing.txt"; then
    cat "$OUT/logs/ldd-missing.txt"
    die "rewire needs libraries that are neither here nor in .debs (add their packages)"
  fi
  log "built $REWIRE"
fi
[ -x "$REWIRE" ] || die "no $REWIRE: run the build phase first"

if [ -z "$MODELS" ]; then
  MODELS=$(with_libs "$REWIRE" models | awk 'NR > 1 { print $1 }' | tr '\n' ' ')
fi
log "models: $MODELS"

# ------------------------------------------------------------------------------- test

if has_phase test; then
  log "CUDA tests"
  regex='Cuda|Gpu|Nccl|DeviceInfo|DeviceExecutor|ExecDevice|LearnerDevice'
  set +e
  with_libs ctest --test-dir "$BUILD_DIR" -R "$regex" --output-on-failure -j 4 \
    > "$OUT/logs/ctest-cuda.log" 2>&1
  echo $? > "$OUT/logs/ctest-cuda.rc"
  if [ "$ALL_TESTS" = 1 ]; then
    log "every test"
    with_libs ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$(nproc)" \
      > "$OUT/logs/ctest-all.log" 2>&1
    echo $? > "$OUT/logs/ctest-all.rc"
  fi
  set -e
  tail -3 "$OUT/logs/ctest-cuda.log"
fi

# ------------------------------------------------------------------------------- ops

if has_phase ops; then
  for m in $MODELS; do
    log "per-op costs: $m"
    with_libs "$REWIRE" bench ops --model "$m" --cost cuda --device "$PROFILE" \
      --cost-cache "$OUT/cost_cache.db" --json "$OUT/ops/$m.json" \
      > "$OUT/logs/ops-$m.log" 2>&1 || log "  failed: $(tail -1 "$OUT/logs/ops-$m.log")"
  done
fi

# ------------------------------------------------------------------------------- latency

if has_phase latency; then
  for m in $MODELS; do
    log "optimise and time end to end: $m"
    with_libs "$REWIRE" optimize --model "$m" --search greedy --budget "$BUDGET" \
      --cost analytic --device "$PROFILE" --also-cost "cuda:$PROFILE" \
      --cost-cache "$OUT/cost_cache.db" --latency "$LATENCY_RUNS" --latency-device cuda \
      --cuda-graph --report "$OUT/optimize/$m.json" -q \
      > "$OUT/logs/optimize-$m.log" 2>&1 || log "  failed: $(tail -1 "$OUT/logs/optimize-$m.log")"
  done
fi

# ------------------------------------------------------------------------------- learner

if has_phase learner; then
  for dev in cuda cpu; do
    log "learner samples/s on $dev"
    with_libs "$REWIRE" bench learner --model squeezenet --steps 120 --minibatch 16 \
      --torch-device "$dev" --threads "$(nproc)" \
      > "$OUT/learner/$dev.txt" 2>&1 || log "  failed: $(tail -1 "$OUT/learner/$dev.txt")"
  done
fi

# ------------------------------------------------------------------------------- report

if has_phase report; then
  "$PYTHON" - "$OUT" "$GPU_NAME" "$TORCH_INFO" "$ARCH" <<'EOF'
import glob, json, os, re, sys

out, gpu, torch_info, arch = sys.argv[1:5]
lines = [f"# rewire GPU check", "",
         f"GPU: {gpu or 'unknown'}; PyTorch/LibTorch {torch_info}; CUDA architectures {arch}", ""]

def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None

def tail_line(path, pattern):
    try:
        with open(path) as f:
            found = [l.strip() for l in f if re.search(pattern, l)]
        return found[-1] if found else None
    except OSError:
        return None

def fmt(v, digits=3):
    return "-" if v is None else f"{v:.{digits}f}"

def fx(v):
    return "-" if not v else f"{v:.3f}x"

lines += ["## Tests", ""]
for name in ("cuda", "all"):
    rc = tail_line(os.path.join(out, "logs", f"ctest-{name}.rc"), r".")
    summary = tail_line(os.path.join(out, "logs", f"ctest-{name}.log"), r"tests passed|tests failed")
    if rc is not None:
        lines.append(f"- ctest ({name}): exit {rc}; {summary or 'no summary'}")
skipped = 0
try:
    with open(os.path.join(out, "logs", "ctest-cuda.log")) as f:
        skipped = sum(1 for l in f if "***Skipped" in l)
except OSError:
    pass
lines += [f"- CUDA tests skipped: {skipped}", ""]

lines += ["## Per-operator costs (cuda cost model vs analytic)", "",
          "| model | ops | cuda total ms | analytic ms | ratio | top op types by measured cost |",
          "|---|---:|---:|---:|---:|---|"]
for path in sorted(glob.glob(os.path.join(out, "ops", "*.json"))):
    r = load(path)
    if not r:
        continue
    top = ", ".join(f"{g['op']} {g['ms']:.3f}" for g in r["by_op"][:3])
    ratio = r["total_ms"] / r["analytic_total_ms"] if r.get("analytic_total_ms") else None
    lines.append(f"| {r['model']} | {r['operators']} | {fmt(r['total_ms'], 4)} | "
                 f"{fmt(r['analytic_total_ms'], 4)} | {fmt(ratio, 2)} | {top} |")
lines += [""]

lines += ["## End to end on the GPU: original vs optimised (greedy on the analytic model)", "",
          "| model | rewrites | analytic predicted | cuda cost model predicted | measured eager ms (before -> after) | measured speedup | CUDA Graph ms (before -> after) | graph speedup | GPU vs CPU max rel error | equal |",
          "|---|---:|---:|---:|---|---:|---|---:|---:|---|"]
for path in sorted(glob.glob(os.path.join(out, "optimize", "*.json"))):
    r = load(path)
    if not r:
        continue
    preds = {p["cost_model"].split("(")[0]: p["speedup"] for p in r.get("predicted", [])}
    g = r.get("cuda_graph", {})
    dc = r.get("device_check", {})
    graph_cell = (f"{g['before_ms']:.3f} -> {g['after_ms']:.3f}" if g.get("used") else
                  ("not used: " + g.get("note", "")[:60] if g.get("note") else "-"))
    graph_speedup = g["before_ms"] / g["after_ms"] if g.get("used") and g.get("after_ms") else None
    err = max(dc.get("max_rel_error_input") or 0, dc.get("max_rel_error_result") or 0)
    lines.append(
        f"| {r['model']} | {len(r['steps'])} | {fx(r['speedup'])} | {fx(preds.get('cuda'))} | "
        f"{r['latency_before_ms']:.3f} -> {r['latency_after_ms']:.3f} | {fx(r.get('measured_speedup'))} | "
        f"{graph_cell} | {fx(graph_speedup)} | {err:.2e} | "
        f"{'yes' if dc.get('equal') else 'NO' if dc.get('checked') else '-'} |")
failed = [os.path.basename(p)[9:-4] for p in glob.glob(os.path.join(out, "logs", "optimize-*.log"))
          if not os.path.exists(os.path.join(out, "optimize", os.path.basename(p)[9:-4] + ".json"))]
if failed:
    lines += ["", "Failed: " + ", ".join(sorted(failed)) + " (see logs/optimize-MODEL.log)"]
lines += [""]

lines += ["## Learner (PPO minibatches on squeezenet observations)", "", "| device | samples/s |", "|---|---:|"]
rates = {}
for dev in ("cuda", "cpu"):
    l = tail_line(os.path.join(out, "learner", f"{dev}.txt"), r"learner samples/s")
    m = re.search(r"samples/s\s+([0-9.]+)", l or "")
    rates[dev] = float(m.group(1)) if m else None
    lines.append(f"| {dev} | {fmt(rates[dev], 1)} |")
if rates.get("cuda") and rates.get("cpu"):
    lines += ["", f"GPU / CPU: {rates['cuda'] / rates['cpu']:.2f}x"]
lines += [""]

path = os.path.join(out, "gpu-check.md")
with open(path, "w") as f:
    f.write("\n".join(lines) + "\n")
print(f"gpu-check: wrote {path}")
EOF
fi
