"""Export a PyTorch model with torch.onnx.export, optimise it with rewire, save it.

    .venv/bin/python examples/optimize_pytorch.py [--out DIR]

First with equality saturation under rewire's learned cost model, judged in ONNX Runtime (the
file is the optimised graph only if it measures faster there); then with a cost model written in
Python: here the median wall time of the graph on rewire's reference executor (LibTorch), which
any function of a rewire.Model that returns milliseconds can replace (your runtime, your device).
"""
import argparse
import os
import statistics
import time

import numpy as np
import torch

import rewire


class Block(torch.nn.Module):
    """A transformer-style block: attention projections that share their input, an MLP."""

    def __init__(self, hidden=256):
        super().__init__()
        self.q = torch.nn.Linear(hidden, hidden)
        self.k = torch.nn.Linear(hidden, hidden)
        self.v = torch.nn.Linear(hidden, hidden)
        self.up = torch.nn.Linear(hidden, 4 * hidden)
        self.down = torch.nn.Linear(4 * hidden, hidden)

    def forward(self, x):
        a = torch.softmax(self.q(x) @ self.k(x).transpose(-1, -2) / 16.0, dim=-1) @ self.v(x)
        x = x + a
        return x + self.down(torch.relu(self.up(x)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="runs/python-example")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "block.onnx")
    torch.manual_seed(0)
    block = Block().eval()
    x = torch.randn(1, 64, 256)
    torch.onnx.export(block, x, path, input_names=["x"], output_names=["y"],
                      opset_version=17)

    model = rewire.load(path)
    s = model.summary()
    print(f"loaded {path}: {s['operators']} operators, {s['parameters']} parameters")

    result = rewire.optimize(model, search="eqsat", runtime="ort")
    print(result)
    print(f"  rewrites: {', '.join(result.rewrites) or 'none'}")
    out = os.path.join(args.out, "block.eqsat.onnx")
    result.model.save(out)
    print(f"  wrote {out}")

    feed = {"x": x.numpy()}

    def reference_ms(candidate):
        """Median of 7 timed runs (after two warm-ups) on rewire's reference executor."""
        for _ in range(2):
            candidate.run(feed, threads=1)
        times = []
        for _ in range(7):
            start = time.perf_counter()
            candidate.run(feed, threads=1)
            times.append((time.perf_counter() - start) * 1e3)
        return statistics.median(times)

    for _ in range(20):  # the executor's first runs (thread pools, allocations) are not timed
        model.run(feed, threads=1)
    timed = rewire.optimize(model, search="greedy", cost=reference_ms, runtime="ort",
                            cost_cache=os.path.join(args.out, "costs.sqlite"))
    print(timed)
    m = timed.report["measurements"]
    print(f"  the Python cost model measured {m['measured']} graphs in {m['seconds']:.1f} s "
          f"({m['memo_hits']} answered from its memo, {m['cache_hits']} from the cost cache)")
    out = os.path.join(args.out, "block.python-cost.onnx")
    timed.model.save(out)
    print(f"  wrote {out}")

    # The written models compute what PyTorch does.
    want = block(x).detach().numpy()
    for name in ("block.eqsat.onnx", "block.python-cost.onnx"):
        got = rewire.load(os.path.join(args.out, name)).run(feed)["y"]
        err = float(np.abs(got - want).max() / np.abs(want).max())
        print(f"  {name} against PyTorch: max |a-b| / max |b| = {err:.1e}")


if __name__ == "__main__":
    main()
