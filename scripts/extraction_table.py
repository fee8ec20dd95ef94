#!/usr/bin/python3
"""The extraction ILP on the e-graphs of docs/eqsat.md's learned-eqsat table: docs/eqsat.md's
extraction table.

    /usr/bin/python3 scripts/extraction_table.py [--graphs ...] [--nodes 10000]
        [--limits 1 10] [--cost learned] [--builder configs/builders/zoo.json]
        [--out docs/eqsat.md] [--out-dir runs/extraction-table] [--rewire build/cli/rewire]

For every graph it grows eqsat's e-graph and the shipped builder's (learned-eqsat) at one node
limit and extracts each with the ILP at every time limit of --limits, with and without the
requirement rows (`--ilp-no-requirement-rows`), under one cost model, without the runtime judge
(extraction is what is compared). Each cell: the gap of the cheapest additive extraction to the
solver's bound (0% where proved optimal), the bound against the relaxation's optimum without the
rows, the ILP's seconds, and whether the ILP's solution is cheaper than its start (greedy and local
search). A run already made is reused (delete --out-dir to start again). Run from the repository
root after a build.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from logged_run import model_flags, verified_report  # noqa: E402
from results import write_section  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN, END = "<!-- extraction-table:begin -->", "<!-- extraction-table:end -->"
GRAPHS = ["xrlflow-bert", "taso-bert", "xrlflow-vit", "xrlflow-tt", "xrlflow-squeezenet",
          "xrlflow-dalle", "bert:layers=24", "nasneta", "inceptionv3"]


def extract(args, graph, search, limit, rows, log):
    """One `rewire optimize` run's search_stats, reused when its report exists."""
    safe = graph.replace(":", "_").replace("=", "").replace(",", "_")
    report = os.path.join(args.out_dir, "runs",
                          f"{safe}.{search}.{limit:g}s.{'rows' if rows else 'plain'}.json")
    flags = ["--search", search, "--egraph-nodes", str(args.nodes), "--ilp-time-limit",
             f"{limit:g}"]
    if search == "learned-eqsat":
        flags += ["--builder", args.builder]
    if not rows:
        flags.append("--ilp-no-requirement-rows")
    r = verified_report(report, [args.rewire, "optimize", *model_flags(graph), "--cost",
                                 args.cost, "-q", "--runtime", "none", *flags], log,
                        f"{graph} {search}")
    return r["search_stats"]


def cell(st):
    """gap (bound / plain relaxation) seconds, and + where the ILP beat its start."""
    if "ilp_gap" not in st:
        return "no ILP solution: " + st.get("note", "")[:40]
    gap = "optimal" if st.get("ilp_optimal") else f"gap {100 * st['ilp_gap']:.1f}%"
    bound = st.get("ilp_bound_ms", 0)
    plain = st.get("ilp_plain_bound_ms")
    b = f"{bound:.3g}" + (f" / {plain:.3g}" if plain is not None else "")
    better = " +" if st["extracted_cost_ms"] < st["incumbent_cost_ms"] * (1 - 1e-9) else ""
    return f"{gap}{better} ({b}) {st.get('ilp_seconds', 0):.1f} s"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--graphs", nargs="+", default=GRAPHS)
    p.add_argument("--nodes", type=int, default=10000)
    p.add_argument("--limits", nargs="+", type=float, default=[1, 10])
    p.add_argument("--cost", default="learned")
    p.add_argument("--builder", default="configs/builders/zoo.json")
    p.add_argument("--out", default="docs/eqsat.md")
    p.add_argument("--out-dir", default="runs/extraction-table")
    p.add_argument("--rewire", default="build/cli/rewire")
    args = p.parse_args()
    os.makedirs(os.path.join(args.out_dir, "runs"), exist_ok=True)
    log = os.path.join(args.out_dir, "log.txt")
    started = time.time()
    configs = [(s, lim, rows) for s in ("eqsat", "learned-eqsat") for lim in args.limits
               for rows in (False, True)]
    rows_out = []
    for g in args.graphs:
        stats = []
        for search, lim, rows in configs:
            print(f"{g}: {search}, ILP {lim:g} s, {'with' if rows else 'without'} requirement rows",
                  file=sys.stderr, flush=True)
            stats.append(extract(args, g, search, lim, rows, log))
        rows_out.append((g, stats))
    took = (time.time() - started) / 60
    cmd = "/usr/bin/python3 scripts/extraction_table.py" + (
        "" if args.graphs == GRAPHS else " --graphs " + " ".join(args.graphs))
    lines = [BEGIN, "", f"Produced by `{cmd}` (do not edit by hand; this invocation took "
             f"{took:.1f} minutes on this 2-core machine). Cost model `{args.cost}`, "
             f"{args.nodes:,} e-nodes, eqsat's e-graph and the shipped builder's "
             f"(`{args.builder}`). Each cell: the gap of the cheapest additive extraction to the "
             "solver's bound, or optimal (proved); `+` where the ILP's solution is cheaper than "
             "its start (greedy extraction and local search); in brackets the bound (ms) / the "
             "relaxation's optimum without requirement rows; the ILP's seconds.", ""]
    head = ["graph", "e-nodes"] + [
        f"{'eqsat' if s == 'eqsat' else 'builder'} {lim:g} s {'rows' if rows else 'plain'}"
        for s, lim, rows in configs]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "---|" * len(head))
    for g, stats in rows_out:
        nodes = f"{stats[0].get('egraph_nodes', 0):,} / {stats[len(stats) // 2].get('egraph_nodes', 0):,}"
        lines.append("| " + " | ".join([g, nodes] + [cell(st) for st in stats]) + " |")
    # Summary: proved optimal or within 2% of the bound, with and without the rows.
    for lim in args.limits:
        for rows in (False, True):
            idx = [i for i, c in enumerate(configs) if c[1] == lim and c[2] == rows]
            n = sum(1 for _, st in rows_out for i in idx)
            ok = sum(1 for _, st in rows_out for i in idx
                     if st[i].get("ilp_optimal") or st[i].get("ilp_gap", 1) <= 0.02)
            better = sum(1 for _, st in rows_out for i in idx
                         if st[i]["extracted_cost_ms"] < st[i]["incumbent_cost_ms"] * (1 - 1e-9))
            lines.append("")
            lines.append(f"- ILP {lim:g} s, {'with' if rows else 'without'} requirement rows: "
                         f"optimal or within 2% of the bound on {ok} of {n} e-graphs; cheaper "
                         f"than its start on {better} of {n}.")
    lines += ["", END]
    write_section(args.out, BEGIN, END, "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
