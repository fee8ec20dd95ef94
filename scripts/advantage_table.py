#!/usr/bin/env python3
"""The local advantage table (docs/advantage.md, "Searches"): a model trained on small graphs
guides searches on unseen, larger ones, and every search reports the cost evaluations it made.

It collects walks on small graphs and trains a local advantage model on them (`rewire advantage
collect` and `train`, once per cost model: the labels and node-cost features are that cost
model's), then optimises each test graph (`rewire optimize --report`) with:
  - the guided progressive search (`--search advantage --ranker model`) and its unguided twin
    (`--ranker uniform`), and the rule-prior ranker (`--ranker rule`), on every seed;
  - greedy and backtracking search, unpruned and with `--advantage-top K` for each K.
It prints a markdown table per cost model: the speedup each search reached (under that cost
model) and its evaluations (candidates costed), and for the searches the targets compare:
  - guided against its twin, per seed: the evaluations the guided search took to reach a cost
    at least as low as the twin's final one, divided by the evaluations the twin took to reach
    its final one ("x twin"; below 0.5 meets the target); "worse" where guided never reached it;
  - pruned greedy/backtracking against unpruned: evaluations divided by the unpruned run's
    (target: at most 1/3) and the result's cost against the unpruned run's (target: within 1%).
Runs are kept in --out-dir; a run whose report exists is not run again.

usage: /usr/bin/python3 scripts/advantage_table.py [--graphs ...] [--train-graphs ...]
           [--label-transform log|none|signed] [--seeds 1 2 3]
           [--costs analytic cpu] [--top 10 30] [--backtrack-budget 50]
           [--out-dir runs/advantage-table] [--rewire build/cli/rewire]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Small graphs: the zoo's transformers at 2 layers, CNNs at small images, X-RLflow's CNNs at
# smaller shapes.
TRAIN_GRAPHS = ["bert:layers=2", "vit:layers=2", "squeezenet:image=64", "resnet50:image=28",
                "xrlflow-inceptionv3:image=75", "xrlflow-resnext50:image=64"]
TEST_GRAPHS = ["bert", "vit", "tt", "nasneta", "inceptionv3", "resnext50", "taso-bert"]

# "Learning Local Advantage Functions for Generalizable Graph Optimizations", XLA operation
# fusion on TPUs: the guided search's gain and samples against unguided random search's.
PAPER = [
    ("GraphNets", "18% with 1,400 samples", "18% with 3,500"),
    ("Unet", "5% with 300", "5% with 4,500"),
    ("DeepRank", "5% with 2,000", "5% with 4,500"),
    ("SSD-MobileNet", "2.3% with 400", "0.5%"),
    ("MNasNet", "2%", "2.8%"),
]


def run(cmd, log):
    """Runs `cmd`, its output appended to `log`; raises with the log's tail on failure."""
    with open(log, "a") as f:
        f.write("$ " + " ".join(cmd) + "\n")
        f.flush()
        r = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=REPO)
    if r.returncode != 0:
        with open(log) as f:
            tail = f.read()[-2000:]
        sys.exit(f"failed ({r.returncode}): {' '.join(cmd)}\n{tail}")


def cost_flags(args, cost):
    flags = ["--cost", cost]
    if cost != "analytic":
        flags += ["--cost-cache", os.path.join(args.out_dir, "cost-cache.sqlite")]
    return flags


def model_file(args, cost, log):
    """Collects the small graphs' walks and trains a model under `cost` (once); its path."""
    d = os.path.join(args.out_dir, cost.replace(":", "-"))
    os.makedirs(d, exist_ok=True)
    data = os.path.join(d, "small.jsonl")
    model = os.path.join(d, f"model{tag(args)}.pt")
    if not os.path.exists(data):
        cmd = [args.rewire, "advantage", "collect", "--walks", "4", "--steps", "20", "--tau",
               "0.01", "--seed", "0", "--out", data] + cost_flags(args, cost)
        for g in args.train_graphs:
            cmd += ["--model", g]
        run(cmd, log)
    if not os.path.exists(model):
        run([args.rewire, "advantage", "train", "--data", data, "--out", model, "--epochs", "10",
             "--steps-per-epoch", "50", "--batch", "64", "--hidden", "64", "--layers", "3",
             "--lr", "1e-3", "--seed", "0", "--threads", str(args.threads),
             "--label-transform", args.label_transform] + cost_flags(args, cost)[2:], log)
    return model


def tag(args):
    """The file-name tag of runs of a model trained with another label transform than log."""
    return "" if args.label_transform == "log" else "-" + args.label_transform


def optimize(args, cost, graph, name, flags, log):
    """One `rewire optimize` run (once); its report."""
    d = os.path.join(args.out_dir, cost.replace(":", "-"), graph)
    os.makedirs(d, exist_ok=True)
    report = os.path.join(d, name + ".json")
    if not os.path.exists(report):
        run([args.rewire, "optimize", "--model", graph, "-q", "--report", report]
            + cost_flags(args, cost) + flags, log)
    with open(report) as f:
        return json.load(f)


def evals_to_reach(report, cost_ms):
    """Evaluations the run took to reach a cost at most `cost_ms`; None if it never did."""
    if report["initial_cost_ms"] <= cost_ms * (1 + 1e-9):
        return 0
    for step in report["steps"]:
        if step["cost_ms"] <= cost_ms * (1 + 1e-9):
            return step.get("evaluations")
    return None


def fmt_ratio(x):
    return "-" if x is None else f"{x:.2f}"


def table(args, cost, model, log):
    rows, guided_met, pruned_met = [], [], {}
    for graph in args.graphs:
        progressive = {}
        for ranker in ["model", "uniform", "rule"]:
            name = "advantage-" + ranker + (tag(args) if ranker == "model" else "")
            progressive[ranker] = [
                optimize(args, cost, graph, f"{name}-s{seed}",
                         ["--search", "advantage", "--ranker", ranker, "--advantage-model", model,
                          "--budget", "1000000", "--search-seed", str(seed)], log)
                for seed in args.seeds]
        ratios = []
        for g, u in zip(progressive["model"], progressive["uniform"]):
            reached = evals_to_reach(g, u["final_cost_ms"])
            twin = u["search_stats"]["evaluations_to_best"]
            ratios.append(None if reached is None else reached / max(twin, 1))
        for ranker, reports in progressive.items():
            sp = [r["speedup"] for r in reports]
            ev = [r["candidates_evaluated"] for r in reports]
            eb = [r["search_stats"]["evaluations_to_best"] for r in reports]
            note = ""
            if ranker == "model":
                note = "x twin " + ", ".join("worse" if x is None else f"{x:.2f}" for x in ratios)
                ok = all(x is not None and x <= 0.5 for x in ratios)
                guided_met.append((graph, ok))
            label = ranker + (f" {args.label_transform}" if ranker == "model" else "")
            rows.append((graph, f"advantage ({label}{', guided' if ranker == 'model' else ''}"
                         f"{', unguided twin' if ranker == 'uniform' else ''})",
                         f"{statistics.mean(sp):.3f} ({min(sp):.3f}-{max(sp):.3f})",
                         f"{statistics.mean(ev):.0f}", f"{statistics.mean(eb):.0f}", note))
        for search, extra in [("greedy", []),
                              ("backtrack", ["--budget", str(args.backtrack_budget)])]:
            base = optimize(args, cost, graph, search, ["--search", search] + extra, log)
            rows.append((graph, search, f"{base['speedup']:.3f}",
                         str(base["candidates_evaluated"]),
                         str(base["search_stats"]["evaluations_to_best"]), ""))
            for k in args.top:
                for ranker in ["model", "rule"]:
                    name = f"{search}-top{k}-{ranker}" + (tag(args) if ranker == "model" else "")
                    r = optimize(args, cost, graph, name,
                                 ["--search", search, "--advantage-top", str(k), "--ranker",
                                  ranker, "--advantage-model", model] + extra, log)
                    ratio = r["candidates_evaluated"] / max(base["candidates_evaluated"], 1)
                    within = r["final_cost_ms"] / base["final_cost_ms"] - 1
                    ok = ratio <= 1 / 3 and within <= 0.01
                    if ranker == "model":
                        pruned_met.setdefault((search, k), []).append((graph, ok))
                    label = ranker + (f" {args.label_transform}" if ranker == "model" else "")
                    rows.append((graph, f"{search} top {k} ({label})", f"{r['speedup']:.3f}",
                                 str(r["candidates_evaluated"]),
                                 str(r["search_stats"]["evaluations_to_best"]),
                                 f"{ratio:.2f} of evals, cost {within * 100:+.1f}%"
                                 + (" (met)" if ok else "")))
    print(f"\n### Cost model: {cost}\n")
    print("| graph | search | speedup (mean, min-max over seeds) | evaluations | to best | "
          "against the target |")
    print("| --- | --- | ---: | ---: | ---: | --- |")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    met = [g for g, ok in guided_met if ok]
    print(f"\nGuided at most half its twin's evaluations at an equal or better result on every "
          f"seed: {len(met)} of {len(guided_met)} graphs ({', '.join(met) or 'none'}).")
    for (search, k), results in pruned_met.items():
        met = [g for g, ok in results if ok]
        print(f"{search} top {k} (model) within 1% at most a third of the evaluations: "
              f"{len(met)} of {len(results)} graphs ({', '.join(met) or 'none'}).")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--graphs", nargs="+", default=TEST_GRAPHS)
    p.add_argument("--train-graphs", nargs="+", default=TRAIN_GRAPHS)
    p.add_argument("--label-transform", default="log", choices=["log", "none", "signed"],
                   help="What the model regresses (rewire advantage train --label-transform)")
    p.add_argument("--seeds", nargs="+", type=int, default=[1, 2, 3])
    p.add_argument("--costs", nargs="+", default=["analytic", "cpu"])
    p.add_argument("--top", nargs="+", type=int, default=[10, 30])
    p.add_argument("--backtrack-budget", type=int, default=50)
    p.add_argument("--threads", type=int, default=1, help="LibTorch threads of training")
    p.add_argument("--out-dir", default=os.path.join(REPO, "runs", "advantage-table"))
    p.add_argument("--rewire", default=os.path.join(REPO, "build", "cli", "rewire"))
    args = p.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    log = os.path.join(args.out_dir, "log.txt")
    start = time.time()
    print("Trained on " + ", ".join(args.train_graphs) + f" ({args.label_transform} labels)"
          + "; tested on " + ", ".join(args.graphs)
          + f"; seeds {' '.join(map(str, args.seeds))}.")
    for cost in args.costs:
        t0 = time.time()
        model = model_file(args, cost, log)
        table(args, cost, model, log)
        print(f"\n({cost}: {time.time() - t0:.0f} s)")
    print("\nThe paper (XLA fusion on TPUs; guided against unguided random search):\n")
    print("| graph | guided | unguided |")
    print("| --- | --- | --- |")
    for row in PAPER:
        print("| " + " | ".join(row) + " |")
    print(f"\nTotal {time.time() - start:.0f} s; runs and log in {args.out_dir}.")


if __name__ == "__main__":
    main()
