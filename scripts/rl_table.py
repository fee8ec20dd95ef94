#!/usr/bin/env python3
"""Prints a markdown table of `rewire eval` results (RUN_DIR/eval.json) for the given run dirs:
the RL agent's cost (greedy-policy rollout and best of N samples) against the baselines under
the same cost model, and wall times.

usage: scripts/rl_table.py runs/bert runs/vit ...
"""
import json
import os
import sys


def main(dirs):
    rows = []
    for d in dirs:
        path = os.path.join(d, "eval.json")
        if not os.path.exists(path):
            print(f"<!-- {path} missing -->")
            continue
        with open(path) as f:
            ev = json.load(f)
        train_s = None
        updates = None
        metrics = os.path.join(d, "metrics.jsonl")
        if os.path.exists(metrics):
            lines = [json.loads(l) for l in open(metrics) if l.strip()]
            if lines:
                train_s = lines[-1].get("wall_time")
                updates = lines[-1].get("update")
        for r in ev["results"]:
            init = r["initial_cost_ms"]
            rl = r["greedy_policy_cost_ms"]
            if r.get("sampled_best_cost_ms"):
                rl = min(rl, r["sampled_best_cost_ms"])
            b = r.get("baselines", {})
            bs = r.get("baseline_seconds", {})
            rows.append((os.path.basename(d), r["model"], init, r["greedy_policy_cost_ms"], rl, r.get("samples", 0),
                         b.get("greedy"), b.get("backtrack"), r.get("rl_seconds"), bs.get("backtrack"), train_s,
                         updates, r.get("verified")))
    print("| run | model | initial ms | RL greedy policy | RL best of 1+N | greedy | backtrack | RL vs backtrack "
          "| RL eval s | backtrack s | training (updates, s) | verified |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for (run, model, init, gp, rl, n, g, bt, rls, bts, tr, upd, ver) in rows:
        def sp(x):
            return f"{init / x:.3f}x" if x else "-"
        vs = f"{(bt / rl - 1) * 100:+.1f}%" if bt else "-"
        print(f"| {run} | {model} | {init:.4f} | {sp(gp)} | {sp(rl)} (N={n}) | {sp(g)} | {sp(bt)} | {vs} | "
              f"{rls:.1f} | {bts:.1f} | {f'{upd}, {tr:.0f}' if tr is not None else '-'} | {'yes' if ver else 'NO'} |")


if __name__ == "__main__":
    main(sys.argv[1:])
