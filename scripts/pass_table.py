#!/usr/bin/env python3
"""The pass-ordering table of docs/passes.md: per graph, the operators left (and the analytic cost)
after the default pipeline, after the order a trained agent chooses (policies trained on the other
graphs, several seeds), after random orders (the median of --sequences), after the best sequence
the exhaustive (or beam) search over pass orders finds, and after the full greedy and eqsat
searches for reference; with each one's compile time.

Every search runs under `--cost operators` (a pass keeps a rewrite when it removes operators: the
seed paper's metric) with the analytic cost of its result beside it (`--also-cost analytic`).

Agents: PPO over the GNN policy on pass actions (env.actions = "passes"), trained in two folds:
the graphs of fold A are ordered by policies trained on fold B's graphs and the other way round;
ONNX files (exported from PyTorch by scripts/export_torch_models.py) are unseen by both and
ordered by fold A's policies.

Runs are cached in --out-dir (a report that exists is not made again): delete a file to redo it.

    /usr/bin/python3 scripts/pass_table.py                 # everything (see --help for the knobs)
    /usr/bin/python3 scripts/pass_table.py --dry-run       # the commands only
"""

import argparse
import glob
import json
import os
import statistics
import sys
import time

from logged_run import REPO, model_flags, run, train_once

FOLD_A = ["gpt2", "vit", "resnext50", "tt"]
FOLD_B = ["bert", "resnet50", "squeezenet"]
# The seed paper's figures (Ganai et al., operations removed against XLA's default order).
SEED = "GPT-2 training graphs: 13.3% fewer operations; GPT-2, BERT and ResNet graphs: 10.4%"


def tag(graph):
    """A file name for a graph: ONNX files get an "onnx-" prefix (gpt2.onnx is not the zoo's)."""
    base = os.path.basename(graph)
    if base.endswith(".onnx"):
        return "onnx-" + base[:-len(".onnx")]
    return base.replace(":", "-").replace("=", "").replace(",", "-")


class Table:
    def __init__(self, args):
        self.a = args
        self.log = os.path.join(args.out_dir, "log.txt")
        self.commands = []

    def report(self, graph, name, search_flags):
        """`rewire optimize` with `search_flags` on `graph` (cached): its JSON report or None."""
        a = self.a
        path = os.path.join(a.out_dir, "reports", f"{tag(graph)}.{name}.json")
        also = "operators" if a.cost != "operators" else "analytic"
        cmd = [a.rewire, "optimize", "-q", *model_flags(graph), "--cost", a.cost,
               "--also-cost", also, *search_flags, "--report", path]
        self.commands.append(("# cached: " if os.path.exists(path) else "") + " ".join(cmd))
        if not os.path.exists(path):
            if a.dry_run or a.from_dir:
                return None
            os.makedirs(os.path.dirname(path), exist_ok=True)
            run(cmd, self.log)
        with open(path) as f:
            return json.load(f)

    def policy(self, fold_name, graphs, seed):
        """A policy trained on `graphs` with `seed` (cached); its checkpoint path."""
        a = self.a
        name = f"fold{fold_name}.seed{seed}"
        run_dir = os.path.join(a.out_dir, "runs", name)
        config = os.path.join(a.out_dir, "configs", name + ".toml")
        models = ", ".join(f'"{g}"' for g in graphs)
        text = (f'[run]\ndir = "{run_dir}"\nagent = "ppo-gnn"\nseed = {seed}\n'
                f'max_updates = {a.updates}\ncheckpoint_every = {a.updates}\n\n'
                f'[env]\nmodels = [{models}]\nhorizon = {a.horizon}\ncost = "{a.cost}"\n'
                f'actions = "passes"\npass_masking = {"true" if a.masking else "false"}\n\n'
                '[gnn]\nhidden = 32\nlayers = 2\nheads = 4\n\n'
                f'[ppo]\nepisodes_per_update = {a.episodes}\nminibatch_size = 16\n'
                'learning_rate = 0.001\n')
        checkpoint = os.path.join(run_dir, "checkpoints", "latest.pt")
        done = os.path.join(run_dir, "trained.json")
        self.commands.append(("# cached: " if os.path.exists(done) else "") +
                             f"{a.rewire} train -q --config {config}")
        if a.dry_run or a.from_dir:
            return checkpoint, None
        os.makedirs(os.path.dirname(config), exist_ok=True)
        seconds = train_once(a.rewire, config, text, run_dir, self.log)
        return checkpoint, seconds


def ops(report):
    return None if report is None else report["final_cost_ms"]


def analytic(report):
    """The analytic speedup of a report's result (its own, when the run's cost is analytic)."""
    if report is None:
        return None
    if report["cost_model"].startswith("analytic"):
        return report["speedup"]
    for p in report.get("predicted", []):
        if p["cost_model"].startswith("analytic"):
            return p["speedup"]
    return None


def fmt(v, digits=0):
    if v is None:
        return "-"
    return f"{v:.{digits}f}"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--graphs", nargs="+", default=FOLD_A + FOLD_B,
                   help="zoo graphs (fold A: %s; fold B: %s; others are ordered by fold A's "
                        "policies)" % (", ".join(FOLD_A), ", ".join(FOLD_B)))
    p.add_argument("--onnx-dir", default=os.path.join(REPO, "runs", "torch-onnx"),
                   help="ONNX files exported from PyTorch (scripts/export_torch_models.py); "
                        "every *.onnx there joins the graphs (none: skipped)")
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    p.add_argument("--updates", type=int, default=50, help="PPO updates per policy")
    p.add_argument("--episodes", type=int, default=8, help="episodes per update")
    p.add_argument("--horizon", type=int, default=10, help="passes per episode at most")
    p.add_argument("--depth", type=int, default=4, help="pass-beam: passes per sequence at most")
    p.add_argument("--width", type=int, default=0, help="pass-beam: graphs per depth (0: all)")
    p.add_argument("--sequences", type=int, default=20, help="pass-random: orders tried")
    p.add_argument("--samples", type=int, default=0,
                   help="sampled orders of the policy besides its most likely one")
    p.add_argument("--no-reference", dest="reference", action="store_false",
                   help="skip the full greedy and eqsat searches")
    p.add_argument("--cost", default="operators",
                   help="the cost model passes keep rewrites by and agents are rewarded by "
                        "(operators, or analytic: the table then counts predicted ms)")
    p.add_argument("--no-masking", dest="masking", action="store_false",
                   help="train with every pass offered, also those that change nothing (the "
                        "ablation of the masking; use another --out-dir)")
    p.add_argument("--out-dir", default=os.path.join(REPO, "runs", "pass-table"))
    p.add_argument("--rewire", default=os.path.join(REPO, "build", "cli", "rewire"))
    p.add_argument("--dry-run", action="store_true", help="print the commands only")
    p.add_argument("--from-dir", action="store_true",
                   help="run nothing: the table of what --out-dir holds")
    args = p.parse_args()
    args.out_dir = os.path.abspath(args.out_dir)
    start = time.time()
    if not args.dry_run:
        os.makedirs(args.out_dir, exist_ok=True)
    t = Table(args)

    graphs = list(args.graphs)
    onnx = sorted(glob.glob(os.path.join(args.onnx_dir, "*.onnx")))
    graphs += onnx
    fold_a = [g for g in FOLD_A if g in graphs]
    fold_b = [g for g in FOLD_B if g in graphs]
    policies = {}  # fold name -> [(seed, checkpoint, seconds)]
    for fold_name, train_on in (("A", fold_a), ("B", fold_b)):
        if not train_on:
            continue
        for seed in args.seeds:
            checkpoint, seconds = t.policy(fold_name, train_on, seed)
            policies.setdefault(fold_name, []).append((seed, checkpoint, seconds))

    rows = []
    for g in graphs:
        # Graphs of fold A are ordered by fold B's policies and the other way round.
        by = "B" if g in fold_a else "A"
        if by not in policies:
            by = "A" if "A" in policies else "B"
        r = {"graph": os.path.basename(g), "by": by}
        r["default"] = t.report(g, "default", ["--search", "passes"])
        r["random"] = t.report(g, f"random{args.sequences}",
                               ["--search", "pass-random", "--sequences", str(args.sequences),
                                "--search-seed", "1"])
        beam = ["--search", "pass-beam", "--depth", str(args.depth)]
        if args.width:
            beam += ["--width", str(args.width)]
        r["beam"] = t.report(g, f"beam-d{args.depth}-w{args.width}", beam)
        r["learned"] = []
        for seed, checkpoint, _ in policies.get(by, []):
            flags = ["--search", "passes", "--policy", checkpoint, "--horizon", str(args.horizon)]
            if args.samples:
                flags += ["--samples", str(args.samples)]
            name = f"learned-fold{by}-seed{seed}" + (f"-s{args.samples}" if args.samples else "")
            if os.path.exists(checkpoint) or args.dry_run:
                r["learned"].append(t.report(g, name, flags))
        if args.reference:
            r["greedy"] = t.report(g, "greedy", ["--search", "greedy", "--budget", "100000"])
            r["eqsat"] = t.report(g, "eqsat", ["--search", "eqsat", "--time-limit", "300"])
        rows.append(r)

    if args.dry_run:
        print("\n".join(t.commands))
        return

    unit = "ops" if args.cost == "operators" else "ms"
    digits = 0 if args.cost == "operators" else 4
    lines = [
        ("| graph | input UNIT | default: UNIT, analytic x | learned (seeds): UNIT | learned mean "
         "UNIT | vs default | random median UNIT | best of depth %d: UNIT | sequence | greedy UNIT "
         "| eqsat UNIT | s: default / learned / beam / eqsat |" % args.depth).replace("UNIT", unit),
        "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    reductions = []
    gaps = []
    for r in rows:
        d = r["default"]
        learned = [x for x in r["learned"] if x is not None]
        learned_ops = [ops(x) for x in learned]
        mean = statistics.mean(learned_ops) if learned_ops else None
        vs = None
        if mean is not None and ops(d):
            vs = 100.0 * (ops(d) - mean) / ops(d)
            reductions.append(vs)
        b = r["beam"]
        if mean is not None and b is not None and ops(b):
            gaps.append((r["graph"], 100.0 * (mean - ops(b)) / ops(b)))
        rnd = r["random"]
        median = None if rnd is None else rnd.get("search_stats", {}).get(
            "median_operators" if args.cost == "operators" else "median_cost_ms")
        seq = None if b is None else b.get("search_stats", {}).get("best_sequence")
        secs = [d and d["search_seconds"],
                statistics.mean([x["search_seconds"] for x in learned]) if learned else None,
                b and b["search_seconds"], r.get("eqsat") and r["eqsat"]["search_seconds"]]
        lines.append(
            f"| {r['graph']} | {fmt(d and d['initial_cost_ms'], digits)} | "
            f"{fmt(ops(d), digits)}, {fmt(analytic(d), 3)}x | "
            f"{' / '.join(fmt(v, digits) for v in learned_ops) or '-'} "
            f"(fold {r['by']}'s) | {fmt(mean, max(digits, 1))} | {fmt(vs, 1)}% | "
            f"{fmt(median, digits)} | {fmt(ops(b), digits)} "
            f"| {seq or '-'} | {fmt(ops(r.get('greedy')), digits)} | "
            f"{fmt(ops(r.get('eqsat')), digits)} "
            f"| {' / '.join(fmt(s, 1) for s in secs)} |")
    summary = []
    if reductions:
        summary.append(f"learned order against the default pipeline: "
                       f"{statistics.mean(reductions):.1f}% {'fewer operators' if digits == 0 else 'less predicted time'} on average "
                       f"(per graph: {', '.join(f'{v:.1f}' for v in reductions)})")
    if gaps:
        summary.append("learned order above the best sequence of depth %d: %s" % (
            args.depth, ", ".join(f"{g} {v:+.1f}%" for g, v in gaps)))
    train_s = [s for fold in policies.values() for _, _, s in fold if s is not None]
    for fold_name, fold in sorted(policies.items()):
        finals = []
        for _, checkpoint, _ in fold:
            metrics = os.path.join(os.path.dirname(os.path.dirname(checkpoint)), "metrics.jsonl")
            if not os.path.exists(metrics):
                continue
            with open(metrics) as f:
                rows_ = [json.loads(line) for line in f if line.strip()]
            returns = [r["charts/episodic_return"] for r in rows_ if "charts/episodic_return" in r]
            if returns:
                finals.append((statistics.mean(returns[:10]), statistics.mean(returns[-10:])))
        if finals:
            summary.append(
                f"fold {fold_name}'s training return, first 10 / last 10 updates (mean of seeds): "
                f"{statistics.mean(a for a, _ in finals):.1f} / "
                f"{statistics.mean(b for _, b in finals):.1f}")
    if train_s:
        summary.append(f"training: {len(train_s)} policies, {statistics.mean(train_s):.0f} s each")
    summary.append("the seed paper (against XLA's default order): " + SEED)
    table = "\n".join(lines) + "\n\n" + "\n".join("- " + s for s in summary) + "\n"
    with open(os.path.join(args.out_dir, "table.md"), "w") as f:
        f.write(table)
    print(table)
    print(f"{time.time() - start:.0f} s")


if __name__ == "__main__":
    sys.exit(main())
