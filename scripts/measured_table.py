#!/usr/bin/env python3
"""X-RLflow's table with every result measured: X-RLflow's graphs optimised with the rules
rewire ships, each search's graph timed end to end in ONNX Runtime against the input, beside the
analytic prediction (and, with --learned, a learned performance model's).

Per graph and training seed it trains a policy on that graph alone with the analytic cost's dense
reward (`rewire train`, as X-RLflow trains; TASO's bert is optimised with its X-RLflow twin's
policies, which never saw it), then `rewire eval` runs the policy's rollouts (best of 4 samples),
its guided beam search, greedy search, backtracking and equality saturation, verifies every
result against the input and measures them all in one set of alternating rounds (eval.runtime =
"ort"), once per intra-op thread count of --threads. It prints a markdown table, and the Spearman
rank correlation between predicted and measured speedups over every distinct result. Runs are
kept in --out-dir; a policy already trained or an eval already run is not run again.

usage: /usr/bin/python3 scripts/measured_table.py [--graphs ...] [--seeds 1] [--updates 20]
           [--threads 1 2] [--rounds 10] [--learned runs/learned-cost/model.json]
           [--out-dir runs/measured-table] [--rewire build/cli/rewire]
"""

import argparse
import json
import os
import statistics
import time

from logged_run import run, train_once
from rank_stats import spearman

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Training horizon per graph: about twice the rewrites greedy search takes there.
HORIZON = {
    "xrlflow-bert": 48,
    "xrlflow-vit": 64,
    "xrlflow-dalle": 48,
    "xrlflow-tt": 64,
    "xrlflow-squeezenet": 32,
    "xrlflow-resnext50": 16,
    "xrlflow-inceptionv3": 40,
    "nasrnn": 80,
}
# Graphs optimised with the policies of a twin that never saw them.
TRANSFER = {"taso-bert": "xrlflow-bert"}
SEARCHES = ["rl", "guided", "greedy", "backtrack", "eqsat"]


def config_text(args, run_dir, graph, seed, horizon, threads):
    also = f'also_cost = ["learned:{os.path.abspath(args.learned)}"]\n' if args.learned else ""
    return (f'[run]\ndir = "{run_dir}"\nseed = {seed}\nmax_updates = {args.updates}\n'
            f'threads = 1\n\n[env]\nmodels = ["{graph}"]\nhorizon = {horizon}\n'
            'max_candidates = 200\ncost = "analytic"\ndevice = "h100"\n\n'
            '[gnn]\nhidden = 32\nlayers = 2\nheads = 4\n\n'
            f'[ppo]\nclip_vloss = false\nepisodes_per_update = {args.episodes}\n'
            'minibatch_size = 16\n\n'
            '[eval]\nsamples = 4\nbaselines = ["greedy", "backtrack", "eqsat"]\nbudget = 100\n'
            f'runtime = "ort"\nruntime_threads = {threads}\nruntime_rounds = {args.rounds}\n'
            + also)


def train(args, graph, seed, log):
    """Trains graph's policy for `seed` (once); its run directory and training seconds."""
    run_dir = os.path.join(args.out_dir, "runs", f"{graph}.seed{seed}")
    config = os.path.join(args.out_dir, f"{graph}.seed{seed}.toml")
    text = config_text(args, run_dir, graph, seed, HORIZON[graph], 1)
    return run_dir, train_once(args.rewire, config, text, run_dir, log)


def evaluate(args, graph, seed, threads, log):
    """`rewire eval` of graph with its policy (or its twin's) at `threads`; the eval.json row."""
    twin = TRANSFER.get(graph, graph)
    policy_run, _ = train(args, twin, seed, log)
    out = os.path.join(args.out_dir, "eval", f"{graph}.seed{seed}.threads{threads}")
    result = os.path.join(out, "eval.json")
    if not os.path.exists(result):
        config = os.path.join(args.out_dir, f"eval.{graph}.seed{seed}.threads{threads}.toml")
        with open(config, "w") as f:
            f.write(config_text(args, out, graph, seed, HORIZON[twin], threads))
        run([args.rewire, "eval", "-q", "--config", config, "--policy",
             os.path.join(policy_run, "checkpoints", "latest.pt")], log)
    with open(result) as f:
        return json.load(f)["results"][0]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--graphs", nargs="+", default=["xrlflow-bert", "taso-bert", "xrlflow-vit",
                                                   "xrlflow-tt", "xrlflow-squeezenet",
                                                   "xrlflow-dalle"])
    p.add_argument("--seeds", type=int, nargs="+", default=[1])
    p.add_argument("--updates", type=int, default=20, help="PPO updates per policy")
    p.add_argument("--episodes", type=int, default=4, help="episodes per update")
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--rounds", type=int, default=10, help="alternating rounds of each eval")
    p.add_argument("--learned", help="a learned performance model (`rewire cost fit --out`)")
    p.add_argument("--out-dir", default=os.path.join(REPO, "runs", "measured-table"))
    p.add_argument("--rewire", default=os.path.join(REPO, "build", "cli", "rewire"))
    args = p.parse_args()
    for g in args.graphs:
        if TRANSFER.get(g, g) not in HORIZON:
            p.error(f"no training horizon for {g}: one of {', '.join(HORIZON)} or "
                    f"{', '.join(TRANSFER)}")
    os.makedirs(args.out_dir, exist_ok=True)
    log = os.path.join(args.out_dir, "log.txt")
    start = time.time()

    header = "| graph | search | predicted |"
    if args.learned:
        header += " learned |"
    header += "".join(f" measured, {t} thread{'s' if t > 1 else ''} |" for t in args.threads)
    print(f"X-RLflow's graphs with the rules rewire ships; predicted by the analytic h100 cost"
          f"{' and the learned model ' + args.learned if args.learned else ''}; measured end to "
          f"end in ONNX Runtime on this CPU against the input ({args.rounds} alternating rounds, "
          f"rounds faster in parentheses). Policies: {args.updates} PPO updates of "
          f"{args.episodes} episodes on the graph alone (taso-bert: its X-RLflow twin's), "
          f"seeds {', '.join(map(str, args.seeds))}; the same graph as a row above says so.\n")
    print(header)
    print("|---|---|---:|" + ("---:|" if args.learned else "") + "---:|" * len(args.threads))
    points = {t: [] for t in args.threads}  # (analytic, learned, measured) per distinct result
    best = {}  # graph -> {search: measured speedup at the first thread count}
    for graph in args.graphs:
        for seed in args.seeds:
            rows = {t: evaluate(args, graph, seed, t, log) for t in args.threads}
            first = rows[args.threads[0]]["measured"]["results"]
            for search in SEARCHES:
                if search not in first:
                    continue
                if search in ("greedy", "backtrack", "eqsat") and seed != args.seeds[0]:
                    continue  # the same search again: one row
                r0 = first[search]
                label = search if search in ("greedy", "backtrack", "eqsat") else \
                    f"{search} (seed {seed})"
                cells = [f"{r0['predicted_speedup']:.3f}x"]
                learned = None
                if args.learned:
                    also = r0.get("also_predicted_speedup") or {}
                    if also:
                        learned = next(iter(also.values()))
                    cells.append(f"{learned:.3f}x" if learned else "-")
                for t in args.threads:
                    m = rows[t]["measured"]
                    r = m["results"][search]
                    same = f", the graph of {r['same_graph_as']}" if r.get("same_graph_as") else ""
                    cells.append(f"{r['speedup']:.3f}x ({r['rounds_faster']}/{m['rounds']}{same})")
                    if not r.get("same_graph_as"):
                        points[t].append((r0["predicted_speedup"], learned, r["speedup"]))
                best.setdefault(graph, {}).setdefault(search, []).append(r0["speedup"])
                print(f"| {graph} | {label} | " + " | ".join(cells) + " |")

    print()
    for t in args.threads:
        pts = points[t]
        line = (f"{t} thread{'s' if t > 1 else ''}: Spearman rank correlation of predicted and "
                f"measured speedups over {len(pts)} distinct results: analytic "
                f"{spearman([a for a, _, _ in pts], [m for _, _, m in pts]):.3f}")
        lp = [(l, m) for _, l, m in pts if l is not None]
        if lp:
            line += f", learned {spearman([l for l, _ in lp], [m for _, m in lp]):.3f}"
        print(line + ".")
    print(f"\nThe best learned search against the best non-learned one, measured at "
          f"{args.threads[0]} thread(s) (median over seeds for the learned ones):")
    for graph, by in best.items():
        learned = max(statistics.median(by[s]) for s in ("rl", "guided") if s in by)
        plain = max(statistics.median(by[s]) for s in ("greedy", "backtrack", "eqsat") if s in by)
        back = statistics.median(by["backtrack"]) if "backtrack" in by else float("nan")
        print(f"- {graph}: learned {learned:.3f}x, non-learned {plain:.3f}x "
              f"({learned / plain:.3f}); against backtracking {learned / back:.3f}")
    print(f"\n{time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
