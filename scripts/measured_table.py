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

With --cost learned the policies are trained, and every search is run, on the kernel model
rewire ships for ONNX Runtime CPU (`env.cost = "learned"`, configs/cost/ort-cpu-<threads>t.json)
instead of the analytic h100 roofline, which is then the "also" prediction. --train-only trains
every policy and stops (training is not timed, so it can share the machine); the evals, which
time, are best run on a quiet machine afterwards. --baselines-once runs greedy and backtracking
with the first seed only (they do not depend on it); equality saturation runs with every seed,
because each policy's result is timed against it in the same rounds (the head-to-head table).

usage: /usr/bin/python3 scripts/measured_table.py [--graphs ...] [--seeds 1] [--updates 20]
           [--threads 1 2] [--rounds 10] [--cost analytic|learned] [--learned MODEL.json]
           [--train-only] [--baselines-once] [--out-dir runs/measured-table]
           [--rewire build/cli/rewire]
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
SEARCHES = ["rl", "guided", "rl-eqsat", "greedy", "backtrack", "eqsat"]
LEARNED = ("rl", "guided", "rl-eqsat")


def config_text(args, run_dir, graph, seed, horizon, threads, baselines=None):
    if args.cost == "learned":
        cost = 'cost = "learned"\ndevice = "h100"\n'
        also = 'also_cost = ["analytic"]\n'
    else:
        cost = 'cost = "analytic"\ndevice = "h100"\n'
        also = f'also_cost = ["learned:{os.path.abspath(args.learned)}"]\n' if args.learned else ""
    baselines = baselines or ["greedy", "backtrack", "eqsat"]
    return (f'[run]\ndir = "{run_dir}"\nseed = {seed}\nmax_updates = {args.updates}\n'
            f'threads = 1\n\n[env]\nmodels = ["{graph}"]\nhorizon = {horizon}\n'
            'max_candidates = 200\n' + cost + '\n'
            '[gnn]\nhidden = 32\nlayers = 2\nheads = 4\n\n'
            f'[ppo]\nclip_vloss = false\nepisodes_per_update = {args.episodes}\n'
            'minibatch_size = 16\n\n'
            '[eval]\nsamples = 4\nbaselines = [' + ", ".join(f'"{b}"' for b in baselines)
            + ']\nbudget = 100\n'
            + ('policy_searches = ["rl-eqsat"]\n' if args.rl_eqsat else '')
            + f'runtime = "ort"\nruntime_threads = {threads}\nruntime_rounds = {args.rounds}\n'
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
        baselines = ["eqsat"] if args.baselines_once and seed != args.seeds[0] else None
        with open(config, "w") as f:
            f.write(config_text(args, out, graph, seed, HORIZON[twin], threads, baselines))
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
    p.add_argument("--cost", choices=["analytic", "learned"], default="analytic",
                   help="the cost the policies are trained and the searches run on")
    p.add_argument("--learned", help="with --cost analytic: a learned performance model "
                   "(`rewire cost fit --out`) whose predictions are put beside")
    p.add_argument("--train-only", action="store_true", help="train every policy and stop")
    p.add_argument("--rl-eqsat", action="store_true",
                   help="also equality saturation seeded with each policy's rollout (rl-eqsat)")
    p.add_argument("--baselines-once", action="store_true",
                   help="greedy and backtracking with the first seed only")
    p.add_argument("--out-dir", default=os.path.join(REPO, "runs", "measured-table"))
    p.add_argument("--rewire", default=os.path.join(REPO, "build", "cli", "rewire"))
    args = p.parse_args()
    for g in args.graphs:
        if TRANSFER.get(g, g) not in HORIZON:
            p.error(f"no training horizon for {g}: one of {', '.join(HORIZON)} or "
                    f"{', '.join(TRANSFER)}")
    if args.cost == "learned" and args.learned:
        p.error("--learned puts a model beside the analytic cost; with --cost learned the "
                "analytic cost is put beside")
    os.makedirs(args.out_dir, exist_ok=True)
    log = os.path.join(args.out_dir, "log.txt")
    start = time.time()
    if args.train_only:
        for graph in args.graphs:
            for seed in args.seeds:
                twin = TRANSFER.get(graph, graph)
                _, seconds = train(args, twin, seed, log)
                print(f"{twin} seed {seed}: trained ({seconds:.0f} s)", flush=True)
        print(f"{time.time() - start:.0f} s")
        return
    also_name = "analytic" if args.cost == "learned" else ("learned" if args.learned else None)

    predictor = ("the kernel model rewire ships for ONNX Runtime CPU (--cost learned)"
                 if args.cost == "learned" else "the analytic h100 cost")
    header = "| graph | search | predicted |"
    if also_name:
        header += f" {also_name} |"
    header += "".join(f" measured, {t} thread{'s' if t > 1 else ''} |" for t in args.threads)
    print(f"X-RLflow's graphs with the rules rewire ships; searched and predicted by {predictor}"
          f"{'; also predicted by ' + also_name if also_name else ''}; measured end to "
          f"end in ONNX Runtime on this CPU against the input ({args.rounds} alternating rounds, "
          f"rounds faster in parentheses). Policies: {args.updates} PPO updates of "
          f"{args.episodes} episodes on the graph alone under the same cost (taso-bert: its "
          f"X-RLflow twin's), seeds {', '.join(map(str, args.seeds))}; the same graph as a row "
          "above says so.\n")
    print(header)
    print("|---|---|---:|" + ("---:|" if also_name else "") + "---:|" * len(args.threads))
    points = {t: [] for t in args.threads}  # (predicted, also, measured) per distinct result
    best = {}  # graph -> {search: measured speedups at the first thread count}
    h2h = []  # (graph, seed, {learned search: (speedup, lo, hi)}) against eqsat
    for graph in args.graphs:
        for seed in args.seeds:
            rows = {t: evaluate(args, graph, seed, t, log) for t in args.threads}
            first = rows[args.threads[0]]["measured"]["results"]
            for search in SEARCHES:
                if search not in first:
                    continue
                r0 = first[search]
                best.setdefault(graph, {}).setdefault(search, []).append(r0["speedup"])
                if search not in LEARNED and seed != args.seeds[0]:
                    continue  # the same search again: one row
                label = search if search not in LEARNED else \
                    f"{search} (seed {seed})"
                cells = [f"{r0['predicted_speedup']:.3f}x"]
                also_x = None
                if also_name:
                    also = r0.get("also_predicted_speedup") or {}
                    if also:
                        also_x = next(iter(also.values()))
                    cells.append(f"{also_x:.3f}x" if also_x else "-")
                for t in args.threads:
                    m = rows[t]["measured"]
                    r = m["results"][search]
                    same = f", the graph of {r['same_graph_as']}" if r.get("same_graph_as") else ""
                    cells.append(f"{r['speedup']:.3f}x ({r['rounds_faster']}/{m['rounds']}{same})")
                    if not r.get("same_graph_as"):
                        points[t].append((r0["predicted_speedup"], also_x, r["speedup"]))
                print(f"| {graph} | {label} | " + " | ".join(cells) + " |")
            vs = {h["learned"]: (h["speedup"], *h["interval"])
                  for h in rows[args.threads[0]]["measured"].get("head_to_head", [])
                  if h["baseline"] == "eqsat"}
            h2h.append((graph, seed, vs))

    print()
    for t in args.threads:
        pts = points[t]
        line = (f"{t} thread{'s' if t > 1 else ''}: Spearman rank correlation of predicted and "
                f"measured speedups over {len(pts)} distinct results: predicted "
                f"{spearman([a for a, _, _ in pts], [m for _, _, m in pts]):.3f}")
        lp = [(l, m) for _, l, m in pts if l is not None]
        if lp:
            line += f", {also_name} {spearman([l for l, _ in lp], [m for _, m in lp]):.3f}"
        errors = [abs(a / m - 1) for a, _, m in pts]
        if errors:
            line += (f"; predicted within 5% of measured for {sum(e <= 0.05 for e in errors)} of "
                     f"{len(errors)} (mean error {100 * statistics.mean(errors):.1f}%)")
        print(line + ".")
    print(f"\nThe policy's searches against equality saturation's graph, timed against each other "
          f"in the same rounds at {args.threads[0]} thread(s) (learned over eqsat, 95% interval):\n")
    learned_cols = [s for s in LEARNED if any(s in vs for _, _, vs in h2h)]
    print("| graph | seed | " + " | ".join(f"{s} vs eqsat" for s in learned_cols) + " |")
    print("|---|---:|" + "---:|" * len(learned_cols))

    def verdict(x):
        if x is None:
            return "-"
        tag = "faster" if x[1] > 1 else "slower" if x[2] < 1 else "within noise"
        return f"{x[0]:.3f}x [{x[1]:.3f}, {x[2]:.3f}] {tag}"
    for graph, seed, vs in h2h:
        print(f"| {graph} | {seed} | " + " | ".join(verdict(vs.get(s)) for s in learned_cols) + " |")
    print(f"\nThe best learned search against the best non-learned one, each against the input, "
          f"at {args.threads[0]} thread(s) (median over seeds and evals):")
    for graph, by in best.items():
        learned = max(statistics.median(by[s]) for s in LEARNED if s in by)
        plain_search = max((s for s in ("greedy", "backtrack", "eqsat") if s in by),
                           key=lambda s: statistics.median(by[s]))
        plain = statistics.median(by[plain_search])
        back = statistics.median(by["backtrack"]) if "backtrack" in by else float("nan")
        print(f"- {graph}: learned {learned:.3f}x, non-learned {plain:.3f}x ({plain_search}; "
              f"ratio {learned / plain:.3f}); against backtracking {learned / back:.3f}")
    print(f"\n{time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
