#!/usr/bin/env python3
"""The ranking table of a label store (`rewire measure collect`): how well each cost model
recorded beside the labels orders the rewrites of one model as ONNX Runtime does.

Per model and predictor:
  - Spearman: rank correlation of the predicted speedups with the measured (paired) ones;
  - ordered right: of the labels whose measured interval excludes 1 (the rewrite is faster or
    slower outside the pair's noise), those the predictor puts on the same side of 1;
  - mean error: mean |predicted / measured - 1| of the speedups.

    python3 scripts/ranking_table.py labels.jsonl [more.jsonl ...] [--markdown]
        [--label SPEC=NAME ...]

Only the standard library: it runs with any python3.
"""
import argparse
import json
import math
import sys
from collections import OrderedDict

from rank_stats import spearman


def read(paths):
    headers, labels = [], []
    for path in paths:
        with open(path) as f:
            for n, line in enumerate(f, 1):
                line = line.strip()
                if not line:
                    continue
                try:
                    j = json.loads(line)
                except json.JSONDecodeError as e:
                    sys.exit(f"{path}:{n}: not JSON ({e})")
                if j.get("format") == "rewire-labels":
                    headers.append(j)
                elif "speedup" in j:
                    labels.append(j)
    return headers, labels


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("stores", nargs="+")
    ap.add_argument("--markdown", action="store_true", help="a Markdown table")
    ap.add_argument("--label", action="append", default=[],
                    help="SPEC=NAME: call predictor SPEC (as --predict named it) NAME")
    args = ap.parse_args()
    names = dict(l.split("=", 1) for l in args.label if "=" in l)
    headers, labels = read(args.stores)
    if not labels:
        sys.exit("no labels in " + ", ".join(args.stores))
    predictors = []
    for h in headers:
        for p in h.get("predictors", []):
            if p not in predictors:
                predictors.append(p)
    by_model = OrderedDict()
    for l in labels:
        by_model.setdefault(l["model"], []).append(l)
    runtime = sorted({f"{h.get('runtime')} ({h.get('threads')} threads)" for h in headers})
    machines = sorted({h.get("machine", "?") for h in headers})
    print(f"labels: {len(labels)} from {', '.join(runtime)} on {'; '.join(machines)}")
    cols = ["model", "labels", "outside noise", "measured range"]
    for p in predictors:
        n = names.get(p, p)
        cols += [f"{n}: Spearman", f"{n}: ordered right", f"{n}: mean error"]
    rows = []
    for model, ls in by_model.items():
        meas = [l["speedup"] for l in ls]
        outside = [l for l in ls if l["interval"][0] is not None and l["interval"][1] is not None
                   and (l["interval"][0] > 1 or l["interval"][1] < 1)]
        row = [model, str(len(ls)), str(len(outside)), f"{min(meas):.3f}-{max(meas):.3f}"]
        for p in predictors:
            pred = [l["predicted_speedup"].get(p) for l in ls]
            ok = [(m, q) for m, q in zip(meas, pred) if q]
            s = spearman([m for m, _ in ok], [q for _, q in ok])
            right = sum(1 for l in outside if l["predicted_speedup"].get(p)
                        and (l["predicted_speedup"][p] > 1) == (l["speedup"] > 1))
            err = sum(abs(q / m - 1) for m, q in ok) / len(ok) if ok else float("nan")
            row += ["-" if math.isnan(s) else f"{s:.3f}",
                    f"{right}/{len(outside)}" + (f" ({100 * right / len(outside):.0f}%)"
                                                 if outside else ""),
                    f"{100 * err:.1f}%"]
        rows.append(row)
    if args.markdown:
        print("| " + " | ".join(cols) + " |")
        print("|" + "---|" * len(cols))
        for r in rows:
            print("| " + " | ".join(r) + " |")
    else:
        widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(cols)]
        print("  ".join(c.ljust(w) for c, w in zip(cols, widths)))
        for r in rows:
            print("  ".join(x.ljust(w) for x, w in zip(r, widths)))


if __name__ == "__main__":
    main()
