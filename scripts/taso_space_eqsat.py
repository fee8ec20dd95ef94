#!/usr/bin/python3
"""The e-graph searches in TASO's space: docs/eqsat.md's table "In TASO's space".

    /usr/bin/python3 scripts/taso_space_eqsat.py GRAPH_SUBST_PB [--seeds 1 2 3]
        [--graphs ...] [--nodes 10000] [--time-limit 60] [--ilp-time-limit 1] [--cost learned]
        [--builders runs/builder-table] [--out docs/eqsat.md] [--out-dir runs/taso-space-eqsat]
        [--rewire build/cli/rewire]

TASO's space is TASO's 133 generated rules (imported from its graph_subst.pb, which rewire does
not ship: docs/rules.md) and its hand-written ones (configs/rules/taso). On X-RLflow's graphs it
runs eqsat, mcts-eqsat and learned-eqsat with each seed's builder (those scripts/builder_table.py
trained on rewire's own rules: none of TASO's generated rules was seen in training, so only their
class features carry), with its default lookahead and without it, all at one node limit, one
build-time limit and one ILP time limit, under one cost model, without the runtime judge (the
predicted costs are compared). A run already made is reused (delete --out-dir to start again).
Run from the repository root after a build.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from logged_run import model_flags, run, verified_report  # noqa: E402
from results import write_section  # noqa: E402

BEGIN, END = "<!-- taso-space-eqsat:begin -->", "<!-- taso-space-eqsat:end -->"
GRAPHS = ["xrlflow-bert", "taso-bert", "xrlflow-vit", "xrlflow-tt", "xrlflow-squeezenet",
          "xrlflow-dalle"]


def optimize(args, rules, graph, label, flags, log):
    """One `rewire optimize` run's report, reused when it exists."""
    safe = graph.replace(":", "_").replace("=", "").replace(",", "_")
    report = os.path.join(args.out_dir, "runs", f"{safe}.{label}.json")
    return verified_report(
        report, [args.rewire, "optimize", *model_flags(graph), "--rules", rules, "--cost",
                 args.cost, "-q", "--runtime", "none", "--egraph-nodes", str(args.nodes),
                 "--time-limit", f"{args.time_limit:g}", "--extract", "ilp", "--ilp-time-limit",
                 f"{args.ilp_time_limit:g}", *flags], log, f"{graph} {label}")


def cell(r):
    st = r["search_stats"]
    return (f"{r['speedup']:.3f}x / {st.get('egraph_nodes', 0):,} / "
            f"{r['search_seconds']:.1f} s")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("graph_subst", metavar="GRAPH_SUBST_PB", help="TASO's graph_subst.pb")
    p.add_argument("--seeds", nargs="+", type=int, default=[1, 2, 3])
    p.add_argument("--graphs", nargs="+", default=GRAPHS)
    p.add_argument("--nodes", type=int, default=10000)
    p.add_argument("--time-limit", type=float, default=60)
    p.add_argument("--ilp-time-limit", type=float, default=1)
    p.add_argument("--cost", default="learned")
    p.add_argument("--builders", default="runs/builder-table",
                   help="the folder of builder.seedN.json (scripts/builder_table.py writes them)")
    p.add_argument("--out", default="docs/eqsat.md")
    p.add_argument("--out-dir", default="runs/taso-space-eqsat")
    p.add_argument("--rewire", default="build/cli/rewire")
    args = p.parse_args()
    builders = {s: os.path.join(args.builders, f"builder.seed{s}.json") for s in args.seeds}
    for s, path in builders.items():
        if not os.path.exists(path):
            sys.exit(f"no builder {path}: run scripts/builder_table.py first (it trains them), "
                     "or name their folder with --builders")
    os.makedirs(os.path.join(args.out_dir, "runs"), exist_ok=True)
    log = os.path.join(args.out_dir, "log.txt")
    started = time.time()
    taso_rules = os.path.join(args.out_dir, "taso.rules")
    if not os.path.exists(taso_rules):
        run([args.rewire, "rules", "import-taso", os.path.abspath(args.graph_subst), "--out",
             os.path.abspath(taso_rules)], log)
    rules = "configs/rules/taso," + os.path.abspath(taso_rules)

    columns = [("eqsat", ["--search", "eqsat"]), ("mcts-eqsat", ["--search", "mcts-eqsat"])]
    for s in args.seeds:
        columns.append((f"learned s{s}", ["--search", "learned-eqsat", "--builder", builders[s]]))
    for s in args.seeds:
        columns.append((f"s{s} no lookahead", ["--search", "learned-eqsat", "--builder",
                                               builders[s], "--builder-lookahead", "0"]))
    rows = {}
    for g in args.graphs:
        for label, flags in columns:
            print(f"{g}: {label}", file=sys.stderr, flush=True)
            rows[(g, label)] = optimize(args, rules, g, label.replace(" ", "-"), flags, log)
    took = (time.time() - started) / 60

    cmd = "/usr/bin/python3 scripts/taso_space_eqsat.py graph_subst.pb" + (
        "" if args.graphs == GRAPHS else " --graphs " + " ".join(args.graphs))
    lines = [BEGIN, "", f"Produced by `{cmd}` (do not edit by hand; this invocation took "
             f"{took:.1f} minutes on this 2-core machine). Rules: TASO's 133 (its graph_subst.pb, "
             "commit f11782c, imported by `rewire rules import-taso`) and `configs/rules/taso`. "
             f"Cost model `{args.cost}`, {args.nodes:,} e-nodes, {args.time_limit:g} s of building, "
             f"ILP extraction with {args.ilp_time_limit:g} s. Builders: "
             f"`{args.builders}/builder.seedN.json`, trained on rewire's rules. Each cell: "
             "predicted speedup / e-nodes / search seconds. Every result verified.", ""]
    head = ["graph"] + [label for label, _ in columns]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|---|" + "---:|" * len(columns))
    for g in args.graphs:
        lines.append("| " + " | ".join([g] + [cell(rows[(g, label)]) for label, _ in columns])
                     + " |")
    lines.append("")

    def cost(g, label):
        return rows[(g, label)]["final_cost_ms"]

    for kind in ("learned", "no lookahead"):
        labels = [f"learned s{s}" if kind == "learned" else f"s{s} no lookahead"
                  for s in args.seeds]
        n = len(args.graphs) * len(labels)
        not_worse = sum(1 for g in args.graphs for lab in labels
                        if cost(g, lab) <= cost(g, "eqsat") * (1 + 1e-9))
        cheaper5 = sorted({g for g in args.graphs for lab in labels
                           if cost(g, lab) <= 0.95 * cost(g, "eqsat")})
        vs_mcts = sum(1 for g in args.graphs for lab in labels
                      if cost(g, lab) <= cost(g, "mcts-eqsat") * (1 + 1e-9))
        fast = sum(1 for g in args.graphs for lab in labels
                   if rows[(g, lab)]["search_seconds"] * 10
                   <= rows[(g, "mcts-eqsat")]["search_seconds"])
        name = "The learned builder" if kind == "learned" else "Without lookahead, it"
        lines.append(f"- {name}: at least as cheap as eqsat on {not_worse} of {n} (graph, seed) "
                     f"pairs, as mcts-eqsat on {vs_mcts}; at least 5% cheaper than eqsat on "
                     f"{len(cheaper5)} graph(s){' (' + ', '.join(cheaper5) + ')' if cheaper5 else ''}"
                     f"; 10x faster than mcts-eqsat on {fast} of {n}.")
    lines += ["", END]
    write_section(args.out, BEGIN, END, "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
