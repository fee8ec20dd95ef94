#!/usr/bin/env python3
"""The learned performance model's table: measured graphs of several models, a model fitted on
them, its rank correlation and error on held-out graphs beside the analytic roofline's.

For each model it runs a random search whose graphs are measured end to end in ONNX Runtime at
one thread (`--cost e2e:ort`, a walk of --budget random rewrites: the input and each graph the
walk visits is one measurement), each model into a store of its own. Then `rewire cost fit`
scores the learned model two ways: on a random quarter of all graphs held out (seeds 1, 2, 3),
and on each model's graphs with the model fitted on the others' only (an unseen model). It
prints markdown tables. Stores are kept in --out-dir; a model already measured is not measured
again.

usage: /usr/bin/python3 scripts/learned_cost.py [--budget 30] [--out-dir runs/learned-cost]
           [--models ...] [--extra-store FILE ...] [--rewire build/cli/rewire]
"""

import argparse
import os
import re
import subprocess
import sys
import time

from logged_run import run

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Models and their shape options: small enough that a measurement takes a fraction of a second.
MODELS = {
    "squeezenet": [],
    "xrlflow-squeezenet": [],
    "resnet50": [],
    "bert-2": ["bert", "--layers", "2"],
    "vit-2": ["vit", "--layers", "2"],
    "dalle-2": ["dalle", "--layers", "2"],
    "tt-2": ["tt", "--layers", "2"],
    "nasrnn": [],
    "xrlflow-bert-2": ["xrlflow-bert", "--layers", "2"],
}


def fit(args, stores, test_stores=None, seed=1):
    cmd = [args.rewire, "cost", "fit", "--runtime", "e2e:ort", "--seed", str(seed)]
    for s in stores:
        cmd += ["--store", s]
    for s in test_stores or []:
        cmd += ["--test-store", s]
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
    if p.returncode != 0:
        sys.exit(p.stdout + p.stderr)
    rows = {}
    for line in p.stdout.splitlines():
        m = re.match(r"(learned|analytic\S*(?: x \S+)?)\s+(\S+)\s+(\S+)%\s+(\S+)\s+(\S+)%", line)
        if m:
            rows["learned" if m.group(1) == "learned" else "analytic"] = tuple(
                float(m.group(i)) for i in (2, 3, 4, 5))
    head = p.stdout.splitlines()[0]
    return rows, head


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--budget", type=int, default=30, help="random rewrites per model")
    p.add_argument("--models", nargs="+", default=list(MODELS))
    p.add_argument("--extra-store", nargs="*", default=[],
                   help="more stores to fit on (a training run's measurements.sqlite)")
    p.add_argument("--out-dir", default=os.path.join(REPO, "runs", "learned-cost"))
    p.add_argument("--rewire", default=os.path.join(REPO, "build", "cli", "rewire"))
    args = p.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    log = os.path.join(args.out_dir, "log.txt")
    start = time.time()
    stores = {}
    for name in args.models:
        spec = MODELS[name] or [name]
        store = os.path.join(args.out_dir, name + ".sqlite")
        done = store + ".done"
        if not os.path.exists(done):
            for suffix in ["", "-wal", "-shm"]:
                if os.path.exists(store + suffix):
                    os.remove(store + suffix)
            run([args.rewire, "optimize", "-q", "--model", spec[0], *spec[1:], "--search",
                 "random", "--budget", str(args.budget), "--cost", "e2e:ort",
                 "--runtime-threads", "1", "--cost-cache", store], log)
            open(done, "w").close()
        stores[name] = store

    every = list(stores.values()) + args.extra_store
    print("Held out at random (a quarter of all graphs):\n")
    print("| seed | graphs | learned: Spearman | learned: mean error | analytic (scaled): "
          "Spearman | analytic: mean error |")
    print("|---|---|---|---|---|---|")
    for seed in [1, 2, 3]:
        rows, head = fit(args, every, seed=seed)
        n = re.search(r"fitted on (\d+), (\d+) held out", head)
        l, a = rows["learned"], rows["analytic"]
        print(f"| {seed} | {n.group(1)} fitted, {n.group(2)} held out | {l[0]:.3f} | {l[1]:.1f}% |"
              f" {a[0]:.3f} | {a[1]:.1f}% |")
    print("\nAn unseen model (fitted on the other models' graphs only):\n")
    print("| held-out model | its graphs | learned: Spearman | learned: mean error | "
          "analytic (scaled): Spearman | analytic: mean error |")
    print("|---|---|---|---|---|---|")
    for name, store in stores.items():
        others = [s for s in every if s != store]
        rows, head = fit(args, others, [store])
        n = re.search(r"(\d+) held out", head)
        l, a = rows["learned"], rows["analytic"]
        print(f"| {name} | {n.group(1)} | {l[0]:.3f} | {l[1]:.1f}% | {a[0]:.3f} | {a[1]:.1f}% |")
    print(f"\n{time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
