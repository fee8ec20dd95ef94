#!/usr/bin/python3
"""Produces docs/results.md's equality-saturation section: greedy, backtracking, eqsat (greedy and
ILP extraction), mcts-eqsat and the guided RL search on TASO's and Tensat's models and the zoo's
others, Tensat's published improvements beside them, and eqsat's memory and time against e-graph
size on one large model.

    /usr/bin/python3 scripts/eqsat_results.py [--rewire build/cli/rewire] [--rules PATHS]
        [--policy CHECKPOINT] [--cost analytic] [--models ...] [--out docs/results.md]
        [--taso-pb graph_subst.pb]

Every search is one `rewire optimize` run (its result folded, costed, verified and reported like
any other); a run whose result does not verify fails the script. --rules is passed to every run
(a comma-separated list, e.g. configs/rules,configs/rules/generated, or TASO's imported rules).
Without --policy the guided column is left out. With --taso-pb (TASO's graph_subst.pb) the section
is TASO's space: TASO's graphs and rules, with Tensat's gain over TASO beside eqsat's over
backtracking. Run from the repository root after a build.
"""
import argparse
import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from results import run, write_section  # noqa: E402

TENSAT_MODELS = ["bert", "nasrnn", "resnext50", "nasneta", "inceptionv3", "squeezenet", "vgg19"]
OTHER_MODELS = ["vit", "dalle", "tt", "resnet50"]
# Tensat (MLSys'21), Table 2: runtime improvement over the input on their GPU, TASO's backtracking
# search / Tensat, in percent.
PUBLISHED = {"bert": (8.5, 9.2), "resnext50": (5.5, 8.8), "nasneta": (1.9, 7.3),
             "nasrnn": (45.4, 68.9), "inceptionv3": (6.3, 10.0), "squeezenet": (6.7, 24.5),
             "vgg19": (8.9, 8.9)}
BEGIN, END = "<!-- eqsat-results:begin -->", "<!-- eqsat-results:end -->"
# --taso-pb: TASO's space. TASO's and Tensat's graphs as TASO builds them (the zoo's taso-* and
# xrlflow-* twins; nasrnn and vgg19 are TASO's already), TASO's rules (its shipped file imported
# by `rewire rules import-taso`, plus configs/rules/taso), and a section of their own.
TASO_MODELS = {"taso-bert": "bert", "nasrnn": "nasrnn", "xrlflow-resnext50": "resnext50",
               "taso-nasneta": "nasneta", "xrlflow-inceptionv3": "inceptionv3",
               "xrlflow-squeezenet": "squeezenet", "vgg19": "vgg19"}
TASO_BEGIN, TASO_END = "<!-- eqsat-taso-results:begin -->", "<!-- eqsat-taso-results:end -->"
# The searches run again under the cpu cost model, on the --cpu-models.
CPU_SEARCHES = [("greedy", "greedy", ["--budget", "1000"]),
                ("backtrack", "backtrack", ["--budget", "1000"]),
                ("eqsat greedy", "eqsat", ["--extract", "greedy"]),
                ("eqsat ILP", "eqsat", ["--extract", "ilp"])]


def optimize(args, workdir, model, search, extra=()):
    """One `rewire optimize` run; returns its report with the peak memory of the process."""
    report = os.path.join(workdir, "report.json")
    rss = os.path.join(workdir, "rss.txt")
    for f in (report, rss):
        if os.path.exists(f):
            os.remove(f)
    cmd = ["/usr/bin/time", "-f", "%M", "-o", rss, args.rewire, "optimize", "--model", model,
           "--search", search, "--cost", args.cost, "--report", report, "-q"]
    if args.rules:
        cmd += ["--rules", args.rules]
    cmd += list(extra)
    rc, out = run(cmd)
    if rc != 0 or not os.path.exists(report):
        raise SystemExit(f"rewire optimize failed for {model} {search} {extra}:\n{out}")
    with open(report) as f:
        r = json.load(f)
    if not r["verified"]:
        raise SystemExit(f"{model} {search}: the result does not verify")
    with open(rss) as f:
        r["peak_rss_mib"] = int(f.read().split()[-1]) / 1024.0
    r["extra"] = " ".join(extra)
    return r


def searches(args):
    """(label, search, flags) of each column."""
    nodes = ["--egraph-nodes", str(args.mcts_nodes)]
    ilp = ["--extract", "ilp", "--ilp-time-limit", str(args.ilp_time_limit)]
    out = [("greedy", "greedy", ["--budget", "1000"]),
           ("backtrack", "backtrack", ["--budget", str(args.backtrack_budget)]),
           ("eqsat greedy", "eqsat", ["--extract", "greedy"]),
           ("eqsat ILP", "eqsat", ilp),
           (f"eqsat ILP {args.mcts_nodes // 1000}k", "eqsat", ilp + nodes),
           (f"mcts-eqsat ILP {args.mcts_nodes // 1000}k", "mcts-eqsat", ilp + nodes)]
    if args.policy:
        out.append(("guided", "guided", ["--policy", args.policy, "--budget",
                                         str(args.backtrack_budget)]))
    return out


def improvement(r):
    return 100.0 * (1.0 - r["final_cost_ms"] / r["initial_cost_ms"])


def egraph(r, key):
    return r.get("search_stats", {}).get(key, "")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rewire", default="build/cli/rewire")
    ap.add_argument("--out", default="docs/results.md")
    ap.add_argument("--rules", default="", help="rules path(s) for every run (default: rewire's)")
    ap.add_argument("--policy", default="", help="checkpoint for the guided column")
    ap.add_argument("--cost", default="analytic", help="cost model of every run")
    ap.add_argument("--models", nargs="*", help="only these models")
    ap.add_argument("--backtrack-budget", type=int, default=1000)
    ap.add_argument("--ilp-time-limit", type=float, default=1.0)
    ap.add_argument("--mcts-nodes", type=int, default=10000,
                    help="node limit of the mcts-eqsat column and of the eqsat run beside it")
    ap.add_argument("--cpu-models", default="squeezenet,nasrnn,resnet50",
                    help="models also run under the cpu cost model (empty: none)")
    ap.add_argument("--scaling-model", default="nasneta")
    ap.add_argument("--scaling-nodes", default="12500,25000,50000,100000,200000")
    ap.add_argument("--taso-pb", default="",
                    help="TASO's graph_subst.pb: run TASO's graphs with TASO's rules instead")
    args = ap.parse_args()
    if args.taso_pb:
        taso = TasoRules(args)
        args.rules = "configs/rules/taso," + taso
        args.shown_rules = "configs/rules/taso,<TASO's file imported>"
        args.models = args.models or list(TASO_MODELS)
        args.cpu_models = args.scaling_model = ""
    args.rewire = os.path.abspath(args.rewire)
    if args.policy:
        args.policy = os.path.abspath(args.policy)
    models = args.models or TENSAT_MODELS + OTHER_MODELS
    started = time.time()
    rows = {}
    with tempfile.TemporaryDirectory(prefix="rewire-eqsat-") as tmp:
        for model in models:
            for label, search, extra in searches(args):
                r = optimize(args, tmp, model, search, extra)
                rows[(model, label)] = r
                print(f"{model:12s} {label:22s} {r['speedup']:.3f}x {r['search_seconds']:7.2f} s "
                      f"{r['stop_reason']} {egraph(r, 'egraph_nodes')}", file=sys.stderr)
        cpu_rows = {}
        cpu_args = argparse.Namespace(**vars(args))
        cpu_args.cost = "cpu"
        cache = ["--cost-cache", os.path.join(tmp, "costs.sqlite")]
        for model in [m for m in args.cpu_models.split(",") if m]:
            for label, search, extra in CPU_SEARCHES:
                r = optimize(cpu_args, tmp, model, search, extra + cache)
                cpu_rows[(model, label)] = r
                print(f"{model:12s} cpu {label:18s} {r['speedup']:.3f}x {r['search_seconds']:7.2f} s",
                      file=sys.stderr)
        scaling = []
        if args.scaling_model:
            for n in args.scaling_nodes.split(","):
                r = optimize(args, tmp, args.scaling_model, "eqsat",
                             ["--egraph-nodes", n, "--eqsat-iterations", "100", "--extract", "ilp",
                              "--ilp-time-limit", "10"])
                r["node_limit"] = int(n)
                scaling.append(r)
                print(f"scaling {n}: {egraph(r, 'egraph_nodes')} e-nodes, {r['peak_rss_mib']:.0f} MiB",
                      file=sys.stderr)
    body = render(args, models, rows, cpu_rows, scaling, time.time() - started)
    if args.taso_pb:
        write_section(args.out, TASO_BEGIN, TASO_END, body)
    else:
        write_section(args.out, BEGIN, END, body)
    print(f"wrote {args.out}", file=sys.stderr)


def TasoRules(args):
    """TASO's shipped rules converted by `rewire rules import-taso` (next to the script's output)."""
    workdir = tempfile.mkdtemp(prefix="rewire-taso-rules-")
    atexit.register(shutil.rmtree, workdir, ignore_errors=True)
    out = os.path.join(workdir, "taso.rules")
    rc, text = run([os.path.abspath(args.rewire), "rules", "import-taso", args.taso_pb, "--out", out])
    if rc != 0:
        raise SystemExit(f"rewire rules import-taso {args.taso_pb} failed:\n{text}")
    return out


def render(args, models, rows, cpu_rows, scaling, seconds):
    labels = [label for label, _, _ in searches(args)]
    rules = getattr(args, "shown_rules", "") or args.rules or "configs/rules"
    cmd = "/usr/bin/python3 scripts/eqsat_results.py"
    if args.taso_pb:
        cmd += " --taso-pb graph_subst.pb"
    elif args.rules:
        cmd += f" --rules {args.rules}"
    cmd += " --policy PATH" if args.policy else ""
    cost_name = rows[(models[0], labels[0])]["cost_model"]
    title = ("## Equality saturation in TASO's space (TASO's graphs and rules)" if args.taso_pb else
             "## Equality saturation (eqsat, mcts-eqsat)")
    lines = [TASO_BEGIN if args.taso_pb else BEGIN, title, "",
             f"Produced by `{cmd}` in {seconds / 60:.1f} minutes on this 2-core machine (shared: "
             "times are indicative; each model's searches ran one after another) (do not edit by "
             f"hand). Rules: `{rules}`. Cost model: `{cost_name}` for every run (TASO's model: the "
             "sum of per-operator costs after weight-only subgraphs are folded). Every result was "
             "verified against its input by the reference executor. docs/eqsat.md describes the "
             "searches and their options.", "",
             f"Searches: greedy (budget 1000), backtrack (TASO's search, budget "
             f"{args.backtrack_budget} graphs, alpha 1.05), eqsat with its defaults (50,000 e-nodes, "
             "15 iterations, multi-pattern rules in the first 2, egg's backoff scheduler) and greedy "
             f"or ILP extraction (CBC, {args.ilp_time_limit:g} s, started from greedy improved by "
             f"local search), and eqsat and mcts-eqsat under the same smaller node limit "
             f"({args.mcts_nodes:,} e-nodes) with ILP extraction"
             + (", and the guided search of a policy trained by `rewire train --config "
                "configs/quickstart.toml` (30 PPO updates on SqueezeNet only; beam search with its "
                f"defaults, budget {args.backtrack_budget} graphs)"
                if args.policy else "; no policy was given, so the guided RL search is left out")
             + ".", "",
             "### Improvement over the input", "",
             "Percent of the input's cost saved (higher is better). *TASO / Tensat (paper)*: "
             "Tensat's Table 2, measured on their GPU with TASO's rules: a different cost, so "
             "compare the gaps between columns, not the figures.", "",
             "| model | input ms | " + " | ".join(labels) + " | TASO / Tensat (paper) |",
             "|---|---:|" + "---:|" * len(labels) + "---|"]
    for m in models:
        first = rows[(m, labels[0])]
        cells = [f"{improvement(rows[(m, l)]):.1f}%" for l in labels]
        pub = PUBLISHED.get(TASO_MODELS.get(m, m) if args.taso_pb else m)
        lines.append(f"| {m} | {first['initial_cost_ms']:.4f} | " + " | ".join(cells) + " | " +
                     (f"{pub[0]} / {pub[1]}" if pub else "-") + " |")
    lines += targets(args, models, rows, labels)
    lines += details(models, rows, labels)
    lines += cpu_table(cpu_rows)
    lines += scaling_table(args, scaling)
    lines += [TASO_END if args.taso_pb else END]
    return "\n".join(lines)


def targets(args, models, rows, labels):
    bt, eq = rows, "eqsat ILP"
    mcts, eqn = labels[5], labels[4]
    out = ["", "### Targets", "",
           "eqsat (ILP) against backtracking: at least as good, in at most a tenth of its search "
           f"time; mcts-eqsat against eqsat under the same node limit ({args.mcts_nodes:,}).", "",
           "| model | backtrack | eqsat ILP | as good | backtrack s | eqsat ILP s | time ratio | "
           f"{eqn} | {mcts} | mcts better | eqsat stop at {args.mcts_nodes // 1000}k |",
           "|---|---:|---:|---|---:|---:|---:|---:|---:|---|---|"]
    good = fast = better = 0
    for m in models:
        b, e = bt[(m, "backtrack")], rows[(m, eq)]
        en, mc = rows[(m, eqn)], rows[(m, mcts)]
        ok = e["final_cost_ms"] <= b["final_cost_ms"] * (1 + 1e-9)
        ratio = e["search_seconds"] / max(b["search_seconds"], 1e-9)
        win = mc["final_cost_ms"] < en["final_cost_ms"] * (1 - 1e-9)
        good += ok
        fast += ratio <= 0.1
        better += win
        out.append(f"| {m} | {b['speedup']:.3f}x | {e['speedup']:.3f}x | {'yes' if ok else 'NO'} | "
                   f"{b['search_seconds']:.2f} | {e['search_seconds']:.2f} | {ratio:.3f} | "
                   f"{en['speedup']:.3f}x | {mc['speedup']:.3f}x | {'yes' if win else 'no'} | "
                   f"{en['stop_reason']} |")
    out += ["", f"eqsat (ILP) is at least as good as backtracking on {good} of {len(models)} models "
            f"and within a tenth of its search time on {fast}; mcts-eqsat beats eqsat under the "
            f"same node limit on {better}."]
    if args.taso_pb:
        out += tensat_gap(models, rows)
    return out


def tensat_gap(models, rows):
    """eqsat's gain over backtracking against Tensat's published gain over TASO, in points."""
    out = ["", "eqsat's gain over backtracking (percentage points of the input's cost) against "
           "Tensat's over TASO in its paper:", "",
           "| model | backtrack | eqsat ILP | eqsat's gain | Tensat's gain (paper) | at least Tensat's |",
           "|---|---:|---:|---:|---:|---|"]
    met = compared = 0
    for m in models:
        pub = PUBLISHED.get(TASO_MODELS.get(m, m))
        if not pub:
            continue
        b, e = improvement(rows[(m, "backtrack")]), improvement(rows[(m, "eqsat ILP")])
        ok = e - b >= pub[1] - pub[0] - 1e-9
        met += ok
        compared += 1
        out.append(f"| {m} | {b:.1f}% | {e:.1f}% | {e - b:+.1f} | {pub[1] - pub[0]:+.1f} | "
                   f"{'yes' if ok else 'no'} |")
    out += ["", f"At least Tensat's gain on {met} of {compared} models."]
    return out


def details(models, rows, labels):
    out = ["", "### Every run", "",
           "*e-graph*: e-nodes / e-classes when extraction began; *extraction*: what produced the "
           "graph and the ILP's status (its start's cost is the greedy extraction improved by local "
           "search; a solver that finds nothing better returns it).", "",
           "| model | search | final ms | speedup | search s | stopped | e-graph | greedy / start / "
           "final ms | extraction | peak MiB |",
           "|---|---|---:|---:|---:|---|---|---|---|---:|"]
    for m in models:
        for label in labels:
            r = rows[(m, label)]
            e = r.get("search_stats", {})
            e = e if "egraph_nodes" in e else None  # the e-graph searches' figures
            size = f"{e['egraph_nodes']:,} / {e['egraph_classes']:,}" if e else ""
            costs = (f"{e['greedy_cost_ms']:.4f} / {e['incumbent_cost_ms'] or e['greedy_cost_ms']:.4f}"
                     f" / {e['extracted_cost_ms']:.4f}") if e else ""
            how = (e["extraction"] + (f": {e['note']}" if e["note"] else "")) if e else ""
            out.append(f"| {m} | {label} | {r['final_cost_ms']:.4f} | {r['speedup']:.3f}x | "
                       f"{r['search_seconds']:.2f} | {r['stop_reason']} | {size} | {costs} | {how} | "
                       f"{r['peak_rss_mib']:.0f} |")
    return out


def cpu_table(cpu_rows):
    if not cpu_rows:
        return []
    models = sorted({m for m, _ in cpu_rows}, key=lambda m: list(cpu_rows).index((m, CPU_SEARCHES[0][0])))
    name = next(iter(cpu_rows.values()))["cost_model"]
    out = ["", f"### Under the cpu cost model (`{name}`)", "",
           "Each operator timed on this machine's CPU with LibTorch (cached in SQLite for the "
           "run), eqsat's e-nodes included: percent of the input's cost saved, and search seconds "
           "(which include the timing of operators not seen before).", "",
           "| model | input ms | " + " | ".join(l for l, _, _ in CPU_SEARCHES) + " | " +
           " | ".join(f"{l} s" for l, _, _ in CPU_SEARCHES) + " |",
           "|---|---:|" + "---:|" * (2 * len(CPU_SEARCHES))]
    for m in models:
        rs = [cpu_rows[(m, l)] for l, _, _ in CPU_SEARCHES]
        out.append(f"| {m} | {rs[0]['initial_cost_ms']:.3f} | " +
                   " | ".join(f"{improvement(r):.1f}%" for r in rs) + " | " +
                   " | ".join(f"{r['search_seconds']:.2f}" for r in rs) + " |")
    return out


def scaling_table(args, scaling):
    if not scaling:
        return []
    out = ["", f"### Memory and time against e-graph size ({args.scaling_model})", "",
           "eqsat with the node limit shown, 100 iterations at most, ILP extraction limited to 10 s. "
           "*e-graph MiB*: the e-graph's own estimate of its memory; *peak MiB*: the whole process "
           "(`/usr/bin/time`), which holds the model, the rules, LibTorch and the ILP solver.", "",
           "| node limit | e-nodes | e-classes | iterations | stopped | build s | extract s | ILP "
           "variables | e-graph MiB | peak MiB | speedup |",
           "|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|"]
    for r in scaling:
        e = r["search_stats"]
        out.append(f"| {r['node_limit']:,} | {e['egraph_nodes']:,} | {e['egraph_classes']:,} | "
                   f"{r['iterations']} | {r['stop_reason']} | {e['build_seconds']:.1f} | "
                   f"{e['extract_seconds']:.1f} | {e['ilp_variables']:,} | "
                   f"{e['memory_bytes'] / 1048576:.1f} | {r['peak_rss_mib']:.0f} | {r['speedup']:.3f}x |")
    return out


if __name__ == "__main__":
    main()
