#!/usr/bin/python3
"""The learned e-graph builder against the other searches: docs/eqsat.md's learned-eqsat table.

    /usr/bin/python3 scripts/builder_table.py [--seeds 1 2 3] [--nodes 10000]
        [--graphs ...] [--unseen ...] [--train-models ...] [--epochs 12] [--episodes 3]
        [--cost learned] [--policy CHECKPOINT.pt] [--rounds 5] [--h2h-rounds 10]
        [--out docs/eqsat.md] [--out-dir runs/builder-table] [--rewire build/cli/rewire]

It trains one builder per seed (`rewire train-builder`) on the training models (the zoo's and
X-RLflow's graphs at two layers, and small CNNs), then runs on every graph of --graphs (X-RLflow's
table: none of them trained on at this size) and --unseen (larger graphs no builder saw) greedy
search, backtracking, eqsat, mcts-eqsat and learned-eqsat with each seed's builder (and, with
--policy, the agent's guided search), all under one cost model, the e-graph searches at one node
limit, one build-time limit and one ILP time limit. Every written graph is judged in ONNX Runtime
(CPU, 1 thread, --rounds alternating rounds against the input): the measured column is that paired
speedup of the search's own result. For each graph it also names the rules the learned builder
applied that eqsat did not (under the same limit). On every graph it then times each seed's
graph against eqsat's head to head (`rewire measure pair`, one ONNX Runtime process, --h2h-rounds
alternating rounds; both written without the runtime judge). A checkpoint or a run already made is
reused (delete --out-dir to start again). Run from the repository root after a build.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from logged_run import model_flags, run, verified_report  # noqa: E402
from results import write_section  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN, END = "<!-- builder-table:begin -->", "<!-- builder-table:end -->"
GRAPHS = ["xrlflow-bert", "taso-bert", "xrlflow-vit", "xrlflow-tt", "xrlflow-squeezenet",
          "xrlflow-dalle"]
UNSEEN = ["bert:layers=24", "nasneta", "inceptionv3"]
TRAIN = ["xrlflow-bert:layers=2", "xrlflow-vit:layers=2", "xrlflow-dalle:layers=2",
         "xrlflow-tt:layers=2", "bert:layers=2", "gpt2:layers=1", "nasrnn", "squeezenet",
         "resnet50"]


def run_base(args, graph):
    """The path prefix of a graph's runs under --out-dir (a model spec made a file name)."""
    safe = graph.replace(":", "_").replace("=", "").replace(",", "_")
    return os.path.join(args.out_dir, "runs", safe)


def optimize(args, graph, label, flags, log):
    """One `rewire optimize` run (judged in ONNX Runtime); its report, reused when it exists and
    was judged with a fresh session per round (one without runtime_sessions is run again)."""
    out = f"{run_base(args, graph)}.{label}"
    report = out + ".json"
    if os.path.exists(report):
        with open(report) as f:
            if "runtime_sessions" not in json.load(f):
                os.remove(report)
    return verified_report(
        report, [args.rewire, "optimize", *model_flags(graph), "--cost", args.cost, "-q", "--out",
                 out + ".onnx", "--runtime", "ort", "--runtime-threads", "1", "--runtime-rounds",
                 str(args.rounds), *flags], log, f"{graph} {label}")


def head_to_head(args, graph, label, flags, seed_label, log):
    """The learned builder's own result against eqsat's, timed in one ONNX Runtime process in
    alternating rounds (`rewire measure pair`, a fresh session of each graph per round): (speedup,
    lo, hi, seconds, identical) of learned over eqsat (seconds: what writing the graphs and timing
    them took). Both are written without the runtime judge (each search's own graph), and reused
    when they exist. Two files byte for byte the same are one graph: not timed, identical True."""
    base = run_base(args, graph)
    out = f"{base}.h2h-{seed_label}.txt"
    if os.path.exists(out):
        with open(out) as f:
            text = f.read()
        if not (text.startswith("identical") or "fresh session of each graph per round" in text):
            os.remove(out)  # timed before each round had sessions of its own: time it again
    if not os.path.exists(out):
        started = time.time()
        files = []
        for name, fl in (("eqsat", flags["eqsat"]), (seed_label, flags[label])):
            onnx = f"{base}.{name}.nojudge.onnx"
            if not os.path.exists(onnx):
                run([args.rewire, "optimize", *model_flags(graph), "--cost", args.cost, "-q",
                     "--out", onnx + ".partial.onnx", "--runtime", "none", *fl], log)
                os.replace(onnx + ".partial.onnx", onnx)
            files.append(onnx)
        with open(files[0], "rb") as a, open(files[1], "rb") as b:
            same = a.read() == b.read()
        if same:
            with open(out + ".partial", "w") as f:
                f.write("identical        the two files are byte for byte the same graph\n"
                        f"seconds          {time.time() - started:.1f}\n")
            os.replace(out + ".partial", out)
        else:
            time_pair(args, graph, files, out, started, log)
    with open(out) as f:
        text = f.read()
    took = re.search(r"^seconds\s+([0-9.]+)", text, re.M)
    took = float(took.group(1)) if took else 0.0
    if text.startswith("identical"):
        return (1.0, 1.0, 1.0, took, True)
    m = re.search(r"paired speedup\s+([0-9.]+)x \[([0-9.]+), ([0-9.]+)\]", text)
    if not m:
        sys.exit(f"{graph}: no paired speedup in {out}")
    return tuple(float(x) for x in m.groups()) + (took, False)


def time_pair(args, graph, files, out, started, log):
    """`rewire measure pair` of files[1] against files[0], its output and the seconds since
    `started` written to `out`."""
    p = subprocess.run([args.rewire, "measure", "pair", "--model", files[0], "--against",
                        files[1], "--threads", "1", "--rounds", str(args.h2h_rounds)],
                       capture_output=True, text=True, cwd=REPO)
    with open(log, "a") as f:
        f.write(p.stderr + p.stdout)
    if p.returncode != 0:
        sys.exit(f"{graph}: `rewire measure pair` failed; see {log}")
    with open(out + ".partial", "w") as f:
        f.write(p.stdout + f"seconds          {time.time() - started:.1f}\n")
    os.replace(out + ".partial", out)


def measured(r):
    """The paired ONNX Runtime speedup of the search's own result (not the judge's decision)."""
    for c in r.get("runtime_candidates", []):
        label = c.get("label", "")
        if label.startswith("final") or label == "result":
            return c["speedup"]
    return r.get("runtime_speedup", 0)


def stat(r, key, default=""):
    return r.get("search_stats", {}).get(key, default)


def applied_rules(r):
    """The rules a run applied, as {name: count}, from its rules_applied stat."""
    out = {}
    for item in filter(None, str(stat(r, "rules_applied")).split(", ")):
        if item.startswith("and ") and item.endswith(" more"):
            continue
        name, _, count = item.rpartition(" x")
        out[name] = int(count)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rewire", default=os.path.join(REPO, "build", "cli", "rewire"))
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--graphs", nargs="*", default=GRAPHS)
    ap.add_argument("--unseen", nargs="*", default=UNSEEN)
    ap.add_argument("--train-models", nargs="+", default=TRAIN)
    ap.add_argument("--nodes", type=int, default=10000, help="e-node limit of every e-graph search")
    ap.add_argument("--train-nodes", type=int, default=5000, help="e-node limit in training")
    ap.add_argument("--time-limit", type=float, default=60, help="seconds of e-graph building")
    ap.add_argument("--ilp-time-limit", type=float, default=1)
    ap.add_argument("--epochs", type=int, default=12)
    ap.add_argument("--episodes", type=int, default=3)
    ap.add_argument("--cost", default="learned")
    ap.add_argument("--policy", default="", help="an agent checkpoint for the guided column")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--h2h-rounds", type=int, default=10,
                    help="alternating rounds of the learned builder's graphs against eqsat's")
    ap.add_argument("--out", default=os.path.join(REPO, "docs", "eqsat.md"))
    ap.add_argument("--out-dir", default=os.path.join(REPO, "runs", "builder-table"))
    args = ap.parse_args()
    os.makedirs(os.path.join(args.out_dir, "runs"), exist_ok=True)
    log = os.path.join(args.out_dir, "log.txt")
    started = time.time()

    builders, train_seconds = {}, {}
    for seed in args.seeds:
        path = os.path.join(args.out_dir, f"builder.seed{seed}.json")
        if not os.path.exists(path):
            cmd = [args.rewire, "train-builder", "--cost", args.cost, "--seed", str(seed),
                   "--egraph-nodes", str(args.train_nodes), "--epochs", str(args.epochs),
                   "--episodes", str(args.episodes), "--out", path]
            for m in args.train_models:
                cmd += ["--model", m]
            run(cmd, log)
        with open(path) as f:
            train_seconds[seed] = json.load(f)["train_seconds"]
        builders[seed] = path
        print(f"builder seed {seed}: trained in {train_seconds[seed]:.0f} s", file=sys.stderr)

    egraph = ["--egraph-nodes", str(args.nodes), "--time-limit", str(args.time_limit),
              "--extract", "ilp", "--ilp-time-limit", str(args.ilp_time_limit)]
    columns = [("greedy", ["--search", "greedy", "--budget", "1000"]),
               ("backtrack", ["--search", "backtrack", "--budget", "1000"]),
               ("eqsat", ["--search", "eqsat", *egraph]),
               ("mcts-eqsat", ["--search", "mcts-eqsat", *egraph])]
    columns += [(f"learned s{s}", ["--search", "learned-eqsat", "--builder", builders[s], *egraph])
                for s in args.seeds]
    if args.policy:
        columns.append(("guided", ["--search", "guided", "--policy", os.path.abspath(args.policy),
                                   "--budget", "1000"]))
    rows = {}
    for graph in args.graphs + args.unseen:
        for label, flags in columns:
            r = optimize(args, graph, label.replace(" ", "-"), flags, log)
            rows[(graph, label)] = r
            print(f"{graph:22s} {label:12s} predicted {r['speedup']:.3f}x measured "
                  f"{measured(r):.3f}x {r['search_seconds']:7.2f} s "
                  f"{stat(r, 'egraph_nodes')}", file=sys.stderr)
    flags = dict(columns)
    h2h = {}
    for graph in args.graphs + args.unseen:
        for seed in args.seeds:
            label = f"learned s{seed}"
            h2h[(graph, seed)] = head_to_head(args, graph, label, flags, f"learned-s{seed}", log)
            print(f"{graph:22s} {label} against eqsat head to head: {h2h[(graph, seed)][0]:.3f}x",
                  file=sys.stderr)
    body = render(args, columns, rows, train_seconds, time.time() - started, h2h)
    write_section(args.out, BEGIN, END, body)
    print(f"wrote {args.out}", file=sys.stderr)


def render(args, columns, rows, train_seconds, seconds, h2h):
    labels = [label for label, _ in columns]
    learned = [f"learned s{s}" for s in args.seeds]
    cost_name = rows[(args.graphs[0], labels[0])]["cost_model"]
    cmd = "/usr/bin/python3 scripts/builder_table.py" + (" --policy PATH" if args.policy else "")
    total = (sum(r["seconds"] for r in rows.values()) + sum(train_seconds.values())
             + sum(h[3] for h in h2h.values()))
    lines = [BEGIN, "", f"Produced by `{cmd}` (do not edit by hand); its runs took "
             f"{total / 60:.1f} minutes in all on this 2-core machine (training, every "
             "`rewire optimize` and the head-to-head timings; a run already made is reused, this "
             f"invocation took {seconds / 60:.1f}). Cost model `{cost_name}` for every run and every "
             f"training episode. E-graph searches: {args.nodes:,} e-nodes, {args.time_limit:g} s "
             f"of building, ILP extraction with {args.ilp_time_limit:g} s; greedy and backtrack: "
             "budget 1000. Builders: one per seed, `rewire train-builder` on "
             f"{', '.join(args.train_models)} ({args.train_nodes:,} e-nodes, {args.epochs} epochs "
             f"of {args.episodes} episodes per model): "
             + ", ".join(f"seed {s} {train_seconds[s]:.0f} s" for s in args.seeds)
             + ". Each cell: predicted speedup / measured in ONNX Runtime (CPU, 1 thread, "
             f"{args.rounds} alternating rounds with a fresh session of each graph per round, the "
             "search's own result against the input) / "
             "e-nodes where an e-graph was built (and the ILP's gap: how far the cheapest "
             "additive extraction may be above the optimum) / search seconds. Every result "
             "verified.", ""]
    header = "| graph | " + " | ".join(labels) + " |"
    lines += [header, "|---|" + "---:|" * len(labels)]
    for graph in args.graphs + args.unseen:
        cells = []
        for label in labels:
            r = rows[(graph, label)]
            nodes = stat(r, "egraph_nodes", None)
            cell = f"{r['speedup']:.3f}x / {measured(r):.3f}x"
            if nodes not in (None, ""):
                cell += f" / {int(nodes):,}"
                gap = stat(r, "ilp_gap", None)
                if gap not in (None, ""):
                    cell += f" (gap {100 * float(gap):.0f}%)"
            cell += f" / {r['search_seconds']:.1f} s"
            cells.append(cell)
        name = graph + (" (unseen)" if graph in args.unseen else "")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines.append("")
    # The learned builder against eqsat and mcts-eqsat at the same budget.
    lines += ["| graph | eqsat | mcts-eqsat | learned (mean of seeds) | learned / eqsat cost | "
              "learned / mcts-eqsat seconds | rules the builder applied that eqsat did not |",
              "|---|---:|---:|---:|---:|---:|---|"]
    for graph in args.graphs + args.unseen:
        eq, mc = rows[(graph, "eqsat")], rows[(graph, "mcts-eqsat")]
        ls = [rows[(graph, l)] for l in learned]
        cost = statistics.mean(r["final_cost_ms"] for r in ls)
        secs = statistics.mean(r["search_seconds"] for r in ls)
        eq_rules = applied_rules(eq)
        extra = {}
        for r in ls:
            for name, n in applied_rules(r).items():
                if name not in eq_rules:
                    extra[name] = max(extra.get(name, 0), n)
        named = ", ".join(f"{n} x{c}" for n, c in sorted(extra.items(), key=lambda x: -x[1])[:6])
        lines.append(
            f"| {graph} | {eq['final_cost_ms']:.3f} ms | {mc['final_cost_ms']:.3f} ms | "
            f"{cost:.3f} ms | {cost / eq['final_cost_ms']:.3f} | "
            f"{secs / max(mc['search_seconds'], 1e-9):.3f} | {named or '-'} |")
    # Head to head in ONNX Runtime: each seed's graph against eqsat's, in one process.
    lines += ["", f"Head to head in ONNX Runtime (CPU, 1 thread, {args.h2h_rounds} alternating "
              "rounds in one process with a fresh session of each graph per round, `rewire "
              "measure pair`): each search's own graph (written without the runtime judge), the "
              "learned builder's against eqsat's; the paired speedup with its 95% interval "
              "(above 1: the learned builder's graph runs faster). Where the two files are byte "
              "for byte the same, the builder found eqsat's graph: \"identical graph\", not "
              "timed.",
              "", "| graph | " + " | ".join(f"learned s{s} / eqsat" for s in args.seeds)
              + " | verdict |", "|---|" + "---:|" * len(args.seeds) + "---|"]
    for graph in args.graphs + args.unseen:
        cells, verdicts = [], []
        for seed in args.seeds:
            sp, lo, hi, _, identical = h2h[(graph, seed)]
            if identical:
                cells.append("identical graph")
                verdicts.append("identical")
                continue
            cells.append(f"{sp:.3f}x [{lo:.3f}, {hi:.3f}]")
            verdicts.append("faster" if lo > 1 else "slower" if hi < 1 else "same")
        verdict = ", ".join(f"{v} x{verdicts.count(v)}"
                            for v in ("faster", "same", "slower", "identical") if v in verdicts)
        name = graph + (" (unseen)" if graph in args.unseen else "")
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {verdict} |")
    lines += ["", END]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
