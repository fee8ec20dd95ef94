#!/usr/bin/env python3
"""Regenerates the results section of docs/rl.md: for each model, the final cost reached by greedy
search, backtracking at budget 100 and 1000 (alpha 1.05), the plain policy (its greedy rollout)
and the policy-guided beam search, each with its wall time, all through `rewire optimize` on the
same rules and cost model (every result is verified against the input by rewire before it is
reported).

usage: /usr/bin/python3 scripts/rl_results.py --policy CKPT [--models "bert vit"] [--cost analytic]
           [--device h100] [--rules PATH] [--title TEXT] [--doc docs/rl.md] [--section NAME]
The section between <!-- rl-results:NAME:begin --> and <!-- rl-results:NAME:end --> is replaced
(appended when missing).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from results import write_section  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REWIRE = os.environ.get("REWIRE", os.path.join(ROOT, "build", "cli", "rewire"))  # the binary to run
MODELS = "inceptionv3 resnext50 squeezenet bert vit dalle tt"


def model_args(spec):
    """A model of --models: a zoo name, or NAME:KEY=VALUE,... with shape options, e.g.
    bert:seq_len=128 (rewire optimize --model bert --seq-len 128)."""
    name, _, shape = spec.partition(":")
    args = ["--model", name]
    for kv in filter(None, shape.split(",")):
        key, _, value = kv.partition("=")
        args += ["--" + key.replace("_", "-"), value]
    return args


def label(spec):
    name, _, shape = spec.partition(":")
    return f"{name} ({shape.replace('=', ' ').replace(',', ', ')})" if shape else name


def optimize(model, extra, common, tmp):
    report = os.path.join(tmp, "r.json")
    cmd = [REWIRE, "optimize", "-q", "--report", report] + model_args(model) + common + extra
    start = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - start
    if done.returncode != 0:
        print(f"{model} {' '.join(extra)}: {done.stderr.strip()[-300:]}", file=sys.stderr)
        return None
    with open(report) as f:
        r = json.load(f)
    if not r.get("verified"):
        print(f"{model} {' '.join(extra)}: result not verified", file=sys.stderr)
        return None
    return {"initial": r["initial_cost_ms"], "final": r["final_cost_ms"], "search_s": r.get("search_seconds", wall),
            "wall_s": wall}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--policy", required=True)
    ap.add_argument("--models", default=MODELS)
    ap.add_argument("--cost", default="analytic")
    ap.add_argument("--device", default="h100")
    ap.add_argument("--rules", default="")
    ap.add_argument("--cost-cache", default="", help="SQLite cache of measured op costs (cpu, ort)")
    ap.add_argument("--horizon", type=int, default=128)
    ap.add_argument("--guided-budget", type=int, default=400)
    ap.add_argument("--beam-width", type=int, default=8)
    ap.add_argument("--expand", type=int, default=4)
    ap.add_argument("--cheapest", type=int, default=4)
    ap.add_argument("--title", default="")
    ap.add_argument("--doc", default=os.path.join(ROOT, "docs", "rl.md"))
    ap.add_argument("--section", default="analytic-h100")
    a = ap.parse_args()

    common = ["--cost", a.cost] + (["--device", a.device] if a.device else []) + (["--rules", a.rules] if a.rules else []) + \
        (["--cost-cache", a.cost_cache] if a.cost_cache else [])
    searches = [
        ("greedy", ["--search", "greedy", "--budget", "1000"]),
        ("backtrack 100", ["--search", "backtrack", "--budget", "100", "--alpha", "1.05"]),
        ("backtrack 1000", ["--search", "backtrack", "--budget", "1000", "--alpha", "1.05"]),
        ("policy", ["--search", "rl", "--policy", a.policy, "--samples", "0", "--horizon", str(a.horizon)]),
        ("guided", ["--search", "guided", "--policy", a.policy, "--budget", str(a.guided_budget), "--beam-width",
                    str(a.beam_width), "--expand", str(a.expand), "--cheapest", str(a.cheapest), "--horizon", str(a.horizon)]),
    ]
    start = time.monotonic()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for m in a.models.split():
            row = {"model": label(m)}
            for name, extra in searches:
                row[name] = optimize(m, extra, common, tmp)
                print(f"{m:12s} {name:15s} {row[name]}", file=sys.stderr)
            rows.append(row)
    minutes = (time.monotonic() - start) / 60

    names = [n for n, _ in searches]
    cmd = "/usr/bin/python3 scripts/rl_results.py " + " ".join(
        f"--{k.replace('_', '-')} {v}" for k, v in [("policy", a.policy), ("cost", a.cost), ("device", a.device),
                                                     ("section", a.section)] if v)
    if a.models != MODELS:
        cmd += f" --models '{a.models}'"
    lines = [f"<!-- rl-results:{a.section}:begin -->", f"### {a.title or 'Cost model ' + a.cost + ' ' + a.device}", "",
             f"Produced by `{cmd}` in {minutes:.1f} minutes (do not edit by hand). Final cost in ms "
             "(speedup over the input, seconds of the search itself); best of each row in bold; guided: "
             f"budget {a.guided_budget} graphs, beam {a.beam_width}, the policy's {a.expand} and the cost model's "
             f"{a.cheapest} proposals per graph, seeded with greedy search's result; "
             f"policy and guided horizon {a.horizon}.", "",
             "| model | initial ms | " + " | ".join(names) + " | guided vs best baseline |",
             "|---|---:|" + "---:|" * len(names) + "---:|"]
    wins = within2 = ten = faster = 0
    for row in rows:
        ok = [row[n] for n in names if row[n]]
        if not ok:
            continue
        init = ok[0]["initial"]
        best = min(r["final"] for r in ok)
        cells = []
        for n in names:
            r = row[n]
            if not r:
                cells.append("failed")
                continue
            cell = f"{r['final']:.4f} ({init / r['final']:.3f}x, {r['search_s']:.1f} s)"
            cells.append(f"**{cell}**" if r["final"] <= best * (1 + 1e-9) else cell)
        base = [row[n]["final"] for n in names[:3] if row[n]]
        g = row["guided"]
        vs = "-"
        if g and base:
            diff = (min(base) - g["final"]) / min(base) * 100
            vs = f"{diff:+.1f}% lower cost" if diff >= 0 else f"{-diff:.1f}% higher cost"
            wins += g["final"] <= min(base) * (1 + 1e-9)
        bt = row["backtrack 1000"]
        if g and bt:
            within2 += g["final"] <= bt["final"] * 1.02
            ten += g["final"] <= bt["final"] * 0.90
            faster += g["search_s"] <= bt["search_s"]
        lines.append(f"| {row['model']} | {init:.4f} | " + " | ".join(cells) + f" | {vs} |")
    n = len(rows)
    lines += ["", f"Guided search: at least as good as the best baseline on {wins} of {n} models; within 2% of "
              f"backtracking at budget 1000 on {within2} of {n}; at least 10% lower cost than it on {ten} of {n}; "
              f"its search no slower than backtracking at budget 1000 on {faster} of {n}.",
              f"<!-- rl-results:{a.section}:end -->"]
    section = "\n".join(lines) + "\n"

    write_section(a.doc, f"<!-- rl-results:{a.section}:begin -->", f"<!-- rl-results:{a.section}:end -->",
                  section.rstrip("\n"))
    print(f"wrote {a.doc} ({minutes:.1f} minutes)", file=sys.stderr)


if __name__ == "__main__":
    main()
