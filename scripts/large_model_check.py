#!/usr/bin/env python3
"""A model past protobuf's 2 GB, end to end: a zoo BERT at large shapes exported with its weights
in ONNX's external data, optimised and written with external data again, then the input file and
the written one run in ONNX Runtime on the same inputs and compared. Prints each step's wall time
and peak memory (GNU time's maximum resident set size) and the files' sizes.

    /usr/bin/python3 scripts/large_model_check.py [--rewire build/cli/rewire] [--dir DIR]
                                                  [--hidden 4096] [--layers 3] [--keep]

Needs /usr/bin/time (Debian's `time`, installed by scripts/install-deps.sh) and numpy. The
default model (hidden 4096, 3 layers, MLP 16384) has 604 M parameters: 2.4 GB of float32 weights.
"""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np


def timed(cmd, what):
    """Runs `cmd` under GNU time -v; returns (stdout+stderr, seconds, peak RSS in MiB)."""
    start = time.time()
    r = subprocess.run(["/usr/bin/time", "-v"] + cmd, capture_output=True, text=True)
    seconds = time.time() - start
    out = r.stdout + r.stderr
    if r.returncode != 0:
        sys.exit(f"{what} failed ({r.returncode}):\n" + out[-3000:])
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", out)
    peak = int(m.group(1)) / 1024 if m else float("nan")
    print(f"{what:<38} {seconds:7.1f} s   peak {peak:8.0f} MiB", flush=True)
    return out, seconds, peak


def ort_alone(root, path, feeds, out_dir, label):
    """Loads, runs and times `path` in ONNX Runtime's runner alone; returns the median ms."""
    os.makedirs(out_dir, exist_ok=True)
    requests = "".join(json.dumps(r) + "\n" for r in [
        {"op": "load", "id": "m", "path": path, "threads": 1},
        {"op": "run", "id": "m", "inputs": feeds, "out_dir": out_dir},
        {"op": "time", "id": "m", "inputs": feeds, "warmups": 1, "repeats": 3}, {"op": "quit"}])
    start = time.time()
    r = subprocess.run(["/usr/bin/time", "-v", "node", os.path.join(root, "tools", "ort",
                                                                    "runner.js")],
                       input=requests, capture_output=True, text=True)
    replies = [json.loads(l) for l in r.stdout.splitlines() if l.strip()]
    if r.returncode != 0 or len(replies) != 4 or not all(x.get("ok") for x in replies):
        sys.exit("ONNX Runtime's runner failed:\n" + r.stdout[-2000:] + r.stderr[-2000:])
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", r.stderr)
    print(f"{'ONNX Runtime alone: the ' + label + ' file':<38} {time.time() - start:7.1f} s   peak "
          f"{int(m.group(1)) / 1024:8.0f} MiB", flush=True)
    return replies[2]["median_ms"]


def size_mib(path):
    return os.path.getsize(path) / 2**20


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rewire", default=os.path.join(root, "build", "cli", "rewire"))
    ap.add_argument("--dir", default="", help="work folder (default: a temporary one)")
    ap.add_argument("--hidden", type=int, default=4096)
    ap.add_argument("--layers", type=int, default=3)
    ap.add_argument("--keep", action="store_true", help="keep the files written")
    args = ap.parse_args()
    work = args.dir or tempfile.mkdtemp(prefix="rewire-large-")
    os.makedirs(work, exist_ok=True)
    model, opt = os.path.join(work, "bert.onnx"), os.path.join(work, "bert.opt.onnx")
    try:
        timed([args.rewire, "export", "--model", "bert", "--hidden", str(args.hidden), "--layers",
               str(args.layers), "--external-data", "--out", model], "export (zoo -> external data)")
        print(f"  {model}: {size_mib(model):.2f} MiB, {model}.data: "
              f"{size_mib(model + '.data'):.0f} MiB")
        out, _, _ = timed([args.rewire, "optimize", "--model", model, "--search", "greedy",
                           "--runtime", "none", "--external-data", "--out", opt],
                          "optimize (greedy, verified)")
        for line in out.splitlines():
            if re.match(r"(verified|speedup|wrote|rewrites|cost|dynamic axes)\b", line.strip()):
                print("  " + line.strip())
        if "verified         yes" not in out:
            sys.exit("the optimised graph was not verified:\n" + out[-3000:])
        print(f"  {opt}: {size_mib(opt):.2f} MiB, {opt}.data: {size_mib(opt + '.data'):.0f} MiB")
        a, b = os.path.join(work, "a"), os.path.join(work, "b")
        timed([args.rewire, "run", "--model", model, "--runtime", "ort", "--random-inputs",
               "--input-seed", "3", "--output-dir", a], "ONNX Runtime: the input file")
        inputs = []
        for path in sorted(glob.glob(os.path.join(a, "input.*.npy"))):
            name = os.path.basename(path)[len("input."):-len(".npy")]
            inputs += ["--input", f"{name}={path}"]
        timed([args.rewire, "run", "--model", opt, "--runtime", "ort", "--output-dir", b] + inputs,
              "ONNX Runtime: the written file")
        # ONNX Runtime's own peak and time: its runner (tools/ort/runner.js) alone loading, running
        # and timing each file (the figures above include rewire's process, which imports the
        # model first).
        feeds = {i.split("=", 1)[0]: i.split("=", 1)[1] for i in inputs if i != "--input"}
        medians = {}
        for label, path in (("input", model), ("written", opt)):
            medians[label] = ort_alone(root, path, feeds, os.path.join(work, "c"), label)
        print(f"  measured in ONNX Runtime (CPU, 1 thread): {medians['input']:.0f} ms -> "
              f"{medians['written']:.0f} ms, {medians['input'] / medians['written']:.3f}x")
        for path in sorted(glob.glob(os.path.join(a, "*.npy"))):
            name = os.path.basename(path)
            if name.startswith("input."):
                continue
            want, got = np.load(path), np.load(os.path.join(b, name))
            err = float(np.abs(got - want).max() / (np.abs(want).max() + 1e-6))
            print(f"  output {name[:-4]} {tuple(want.shape)}: max |a-b| / max |b| = {err:.2e}")
            if err > 1e-3:
                sys.exit("the written file's outputs differ from the input file's")
    finally:
        if not args.keep and not args.dir:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
