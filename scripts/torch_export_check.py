#!/usr/bin/python3
"""PyTorch exports as users write them, optimised by rewire and run in ONNX Runtime.

    /usr/bin/python3 scripts/torch_export_check.py [--rewire build/cli/rewire]
        [--work-dir runs/torch-export-check] [--search greedy] [--runtime none|ort]
        [--check dynamic half]

Two checks, each against PyTorch's own outputs (a fixed seed; no download):

  dynamic  A transformer block (hidden 64, 4 heads, packed QKV, LayerNorm, GELU MLP) exported by
           torch.onnx.export with dynamic batch and sequence axes (dynamic_axes). rewire optimises
           it at batch=2, seq=16 (--input-shape), keeping the dynamic axes where its result
           holds at two other sizes. The written file then runs in ONNX Runtime
           (`rewire run --runtime ort`) at two sizes neither the search nor that check used,
           and its outputs are compared with the PyTorch module's at those sizes.
  half     The same block in float16: exported in float32 and converted tensor by tensor (every
           initializer, input and output; torch 1.13 cannot run a float16 module on the CPU to
           trace it), optimised by rewire (verified in float32, written in float16, judged in
           ONNX Runtime), then run in ONNX Runtime. PyTorch's reference is the module with its
           weights and input rounded to float16, run in float32.

Prints one table row per run (max |a-b| / max |b| against PyTorch) and exits 1 when a check
fails: the dynamic axes not kept, an error over the tolerance (1e-4 for float32, 2e-2 for
float16), or a command failing. Needs torch and onnx (/usr/bin/python3) and ONNX Runtime
(scripts/install-deps.sh).
"""
import argparse
import json
import os
import subprocess
import sys
import time

try:
    import numpy as np
    import onnx
    import torch
    from onnx import TensorProto, numpy_helper
except ImportError as e:
    sys.exit(f"missing python module: {e} (run with /usr/bin/python3)")

HIDDEN, HEADS = 64, 4
FIXED = {"batch": 2, "seq": 16}
# Sizes that neither the search (FIXED) nor rewire's own check (v+1 and 2v: 3x17, 4x32) used.
OTHER_SIZES = [(3, 7), (1, 40)]


class Block(torch.nn.Module):
    """A pre-LN transformer block whose reshapes read the input's batch and sequence sizes."""

    def __init__(self):
        super().__init__()
        self.ln1 = torch.nn.LayerNorm(HIDDEN)
        self.qkv = torch.nn.Linear(HIDDEN, 3 * HIDDEN)
        self.proj = torch.nn.Linear(HIDDEN, HIDDEN)
        self.ln2 = torch.nn.LayerNorm(HIDDEN)
        self.up = torch.nn.Linear(HIDDEN, 4 * HIDDEN)
        self.down = torch.nn.Linear(4 * HIDDEN, HIDDEN)

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(h, dim=-1)
        heads = lambda t: t.reshape(b, s, HEADS, h // HEADS).transpose(1, 2)
        q, k, v = heads(q), heads(k), heads(v)
        att = torch.softmax(q @ k.transpose(-2, -1) / (h // HEADS) ** 0.5, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, s, h)
        x = x + self.proj(y)
        return x + self.down(torch.nn.functional.gelu(self.up(self.ln2(x))))


def run(cmd):
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stdout}\n{p.stderr}")
    return p.stdout + p.stderr, time.time() - t0


def rel_error(got, want):
    return float(np.max(np.abs(got - want)) / (np.max(np.abs(want)) + 1e-6))


def export(module, path):
    x = torch.randn(FIXED["batch"], FIXED["seq"], HIDDEN)
    torch.onnx.export(module, (x,), path, input_names=["x"], output_names=["y"], opset_version=14,
                      dynamic_axes={"x": {0: "batch", 1: "seq"}, "y": {0: "batch", 1: "seq"}})
    onnx.checker.check_model(path)


def to_half(src, dst):
    m = onnx.load(src)
    for i, t in enumerate(m.graph.initializer):
        if t.data_type == TensorProto.FLOAT:
            a = numpy_helper.to_array(t).astype(np.float16)
            m.graph.initializer[i].CopyFrom(numpy_helper.from_array(a, t.name))
    for n in m.graph.node:
        for a in n.attribute:
            if a.HasField("t") and a.t.data_type == TensorProto.FLOAT:
                a.t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(a.t).astype(np.float16),
                                                     a.t.name))
    for v in list(m.graph.input) + list(m.graph.output) + list(m.graph.value_info):
        if v.type.tensor_type.elem_type == TensorProto.FLOAT:
            v.type.tensor_type.elem_type = TensorProto.FLOAT16
    onnx.save(m, dst)
    onnx.checker.check_model(dst)


def run_in_ort(args, model, x, size, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    xp = os.path.join(out_dir, "x.npy")
    np.save(xp, x)
    run([args.rewire, "run", "--model", model, "--input-shape", f"batch={size[0]}",
         "--input-shape", f"seq={size[1]}", "--runtime", "ort", "--input", f"x={xp}",
         "--output-dir", out_dir])
    return np.load(os.path.join(out_dir, "y.npy"))


def compare_in_ort(args, module, model, sizes, check, tol, rows, half_input=False):
    """Runs `model` in ONNX Runtime at each (batch, seq) of `sizes` on a random input (rounded
    to float16 with `half_input`) against `module`; appends a row per size; True when every
    error is within `tol`."""
    ok = True
    for b, s in sizes:
        x = torch.randn(b, s, HIDDEN)
        if half_input:
            x = x.half().float()
        with torch.no_grad():
            want = module(x).numpy()
        got = run_in_ort(args, model, x.numpy(), (b, s),
                         os.path.join(args.work_dir, f"ort-{check}-{b}x{s}"))
        err = rel_error(got, want) if got.shape == want.shape else float("inf")
        rows.append((check, f"batch={b}, seq={s}", str(list(got.shape)), err, tol))
        ok = ok and err <= tol
    return ok


def optimise(args, src, dst, report):
    out, secs = run([args.rewire, "optimize", "--model", src, "--input-shape",
                     f"batch={FIXED['batch']}", "--input-shape", f"seq={FIXED['seq']}",
                     "--search", args.search, "--runtime", args.runtime, "--out", dst, "--report",
                     report])
    with open(report) as f:
        r = json.load(f)
    return out, secs, r


def check_dynamic(args, module, rows):
    src = os.path.join(args.work_dir, "block.onnx")
    dst = os.path.join(args.work_dir, "block.opt.onnx")
    export(module, src)
    out, secs, r = optimise(args, src, dst, os.path.join(args.work_dir, "block.report.json"))
    dyn = r.get("dynamic_axes", {})
    ok = bool(dyn.get("kept"))
    print(f"dynamic: {dyn.get('note', 'no dynamic_axes in the report')} ({secs:.1f} s)")
    for line in out.splitlines():
        if line.startswith(("speedup", "rewrites", "runtime ", "decision", "wrote")):
            print("  " + line)
    m = onnx.load(dst)
    dims = [d.dim_param or d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim]
    print(f"  written input x: {dims}")
    ok = ok and dims[:2] == ["batch", "seq"]
    return compare_in_ort(args, module, dst, OTHER_SIZES, "dynamic", 1e-4, rows) and ok


def check_half(args, module, rows):
    f32 = os.path.join(args.work_dir, "block32.onnx")
    src = os.path.join(args.work_dir, "block16.onnx")
    dst = os.path.join(args.work_dir, "block16.opt.onnx")
    export(module, f32)
    to_half(f32, src)
    out, secs, r = optimise(args, src, dst, os.path.join(args.work_dir, "block16.report.json"))
    print(f"half: {r.get('dynamic_axes', {}).get('note', '')} ({secs:.1f} s)")
    for line in out.splitlines():
        if line.startswith(("speedup", "verified", "runtime ", "decision", "wrote")) or "float16" in line:
            print("  " + line)
    m = onnx.load(dst)
    types = {t.data_type for t in m.graph.initializer}
    types |= {v.type.tensor_type.elem_type for v in list(m.graph.input) + list(m.graph.output)}
    ok = TensorProto.FLOAT not in types and TensorProto.FLOAT16 in types
    print(f"  written file: float16 only: {ok}")
    # PyTorch's reference: the weights and the input rounded to float16, computed in float32.
    rounded = Block()
    rounded.load_state_dict({k: v.half().float() for k, v in module.state_dict().items()})
    rounded.eval()
    sizes = [(FIXED["batch"], FIXED["seq"])] + OTHER_SIZES
    return compare_in_ort(args, rounded, dst, sizes, "half", 2e-2, rows, half_input=True) and ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rewire", default="build/cli/rewire")
    ap.add_argument("--work-dir", default="runs/torch-export-check")
    ap.add_argument("--search", default="greedy")
    ap.add_argument("--runtime", default="none",
                    help="rewire optimize's judge: none (default) writes the search's graph, its "
                         "rewrites in the file; ort writes it only where it measures faster")
    ap.add_argument("--check", nargs="+", default=["dynamic", "half"], choices=["dynamic", "half"])
    args = ap.parse_args()
    os.makedirs(args.work_dir, exist_ok=True)
    torch.manual_seed(0)
    module = Block().eval()
    rows, ok = [], True
    if "dynamic" in args.check:
        ok = check_dynamic(args, module, rows) and ok
    if "half" in args.check:
        ok = check_half(args, module, rows) and ok
    print("\n| check | size in ONNX Runtime | output | max rel error vs PyTorch | tolerance |")
    print("|---|---|---|---:|---:|")
    for check, size, shape, err, tol in rows:
        print(f"| {check} | {size} | {shape} | {err:.2e} | {tol:g} |")
    print("\nresult: " + ("pass" if ok else "FAIL"))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
