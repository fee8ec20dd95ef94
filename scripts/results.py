#!/usr/bin/python3
"""Produces docs/results.md: every search on every zoo model and on torchvision ONNX exports.

    /usr/bin/python3 scripts/results.py [--rewire build/cli/rewire] [--out docs/results.md]

For each model it runs `rewire optimize` with greedy, backtrack and random under the analytic
cost model with the h100 profile, and under the cpu cost model for the smaller models; every
result is verified against its input by rewire itself (a run whose result does not verify
fails). For a few models it also measures end-to-end CPU latency of both graphs on the
reference executor, next to the speedup the cost model predicted. Run from the repository root
after a build; needs Debian's python3-torch/torchvision/onnx for the torchvision exports.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ZOO = ["inceptionv3", "resnext50", "squeezenet", "bert", "vit", "dalle", "tt", "resnet50", "nasrnn",
       "nasneta", "vgg19"]
TORCHVISION = ["resnet18", "mobilenet_v2", "squeezenet1_1", "shufflenet_v2_x1_0", "googlenet"]
SEARCHES = ["greedy", "backtrack", "random"]
CPU_MODELS = ["squeezenet", "resnet50", "nasrnn", "bert"]  # small enough to time op by op here
LATENCY_MODELS = ["squeezenet", "bert", "nasrnn", "resnet50", "resnet18"]


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return p.returncode, p.stdout + p.stderr


def export_torchvision(name, workdir):
    """Exports torchvision model `name` to ONNX under workdir/name; returns the file, or None (with
    the reason on stderr) when the export fails."""
    d = os.path.join(workdir, name)
    script = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "python",
                          "torch_reference.py")
    rc, out = run([sys.executable, script, "--model", name, "--out-dir", d])
    if rc != 0:
        print(f"skipping torchvision {name}: export failed\n{out}", file=sys.stderr)
        return None
    return os.path.join(d, "model.onnx")


def write_section(path, begin, end, body):
    """Writes `body` (which starts with `begin` and ends with `end`) into the file at `path` in place
    of the text between those markers, or appends it when the markers are not there yet."""
    old = open(path).read() if os.path.exists(path) else ""
    if begin in old and end in old:
        new = old[:old.index(begin)] + body + old[old.index(end) + len(end):]
    else:
        new = old.rstrip("\n") + "\n\n" + body + "\n"
    with open(path, "w") as f:
        f.write(new)


def optimize(rewire, model, search, cost, budget, workdir, latency=0, extra=()):
    report = os.path.join(workdir, "report.json")
    if os.path.exists(report):
        os.remove(report)
    cmd = [rewire, "optimize", "--model", model, "--search", search, "--cost", cost,
           "--budget", str(budget), "--report", report, "-q"] + list(extra)
    if cost == "cpu":
        cmd += ["--cost-cache", os.path.join(workdir, "costs.sqlite")]
    if latency:
        cmd += ["--latency", str(latency)]
    rc, out = run(cmd)
    if rc != 0 or not os.path.exists(report):
        raise SystemExit(f"rewire optimize failed for {model} {search} {cost}:\n{out}")
    with open(report) as f:
        return json.load(f)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rewire", default="build/cli/rewire")
    ap.add_argument("--out", default="docs/results.md")
    ap.add_argument("--budget", type=int, default=100, help="graphs explored per search")
    ap.add_argument("--models", nargs="*", help="only these models (zoo names or torchvision names)")
    args = ap.parse_args()
    rewire = os.path.abspath(args.rewire)
    started = time.time()
    rows, latency_rows = [], []
    with tempfile.TemporaryDirectory(prefix="rewire-results-") as tmp:
        models = []
        for name in ZOO:
            models.append((name, name, "zoo"))
        for name in TORCHVISION:
            path = export_torchvision(name, tmp)
            if path:
                models.append((name, path, "torchvision"))
        if args.models:
            models = [m for m in models if m[0] in args.models]
        for name, path, source in models:
            costs = ["analytic"] + (["cpu"] if name in CPU_MODELS else [])
            for cost in costs:
                for search in SEARCHES:
                    lat = 5 if (search == "greedy" and name in LATENCY_MODELS) else 0
                    r = optimize(rewire, path, search, cost, args.budget, tmp, latency=lat)
                    r["name"], r["source"] = name, source
                    rows.append(r)
                    print(f"{name:20s} {cost:8s} {search:9s} {r['initial_cost_ms']:.4f} -> "
                          f"{r['final_cost_ms']:.4f} ms ({r['speedup']:.3f}x) in {r['search_seconds']:.1f} s",
                          file=sys.stderr)
                    if lat:
                        latency_rows.append(r)
    write(args.out, rows, latency_rows, args.budget, time.time() - started)


def write(path, rows, latency_rows, budget, seconds):
    lines = [
        "# Search results",
        "",
        "Produced by `/usr/bin/python3 scripts/results.py` (do not edit by hand). Every row is one",
        "`rewire optimize` run; every optimised graph was verified against its input on random",
        "inputs by the reference executor (column *verified*: max relative error). Budget: "
        f"{budget} graphs explored per search (greedy steps, backtrack pops, random rewrites);",
        "backtrack uses alpha 1.05 and caps growth at 1.5x the input's running operators; random",
        "restarts every 20 rewrites.",
        "Costs are the sum of per-operator costs (TASO's model) after weight-only subgraphs are",
        "folded. `analytic(h100)` is a roofline from configs/devices/h100.toml; `cpu` times each",
        "operator on this machine's CPU with LibTorch (2 cores).",
        "",
        "| model | source | cost model | search | initial ms | final ms | speedup | rewrites | search s | stopped | verified (max rel err) |",
        "|---|---|---|---|---:|---:|---:|---:|---:|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['name']} | {r['source']} | {r['cost_model']} | {r['search']} | {r['initial_cost_ms']:.4f} | "
            f"{r['final_cost_ms']:.4f} | {r['speedup']:.3f}x | {len(r['steps'])} | {r['search_seconds']:.2f} | "
            f"{r['stop_reason']} | {'yes' if r['verified'] else 'NO'} ({r['max_rel_error']:.1e}) |")
    lines += [
        "",
        "## Predicted and measured end to end",
        "",
        "Greedy results; latency is the whole graph on the reference executor on this machine's",
        "CPU (median of 5 runs after a warm-up, weights generated beforehand). Under",
        "`analytic(h100)` the prediction is for another device: on an H100 launch overhead",
        "dominates small operators, so fusions and merges (even enlarging 1x1 kernels to 3x3 to",
        "merge them) pay off there and may not here. Under `cpu` the prediction and the",
        "measurement are for the same machine: the gap is what the sum-of-ops model misses",
        "(intermediate copies, cache effects, views).",
        "",
        "| model | cost model | predicted speedup | CPU latency before ms | after ms | measured speedup |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for r in latency_rows:
        before, after = r["latency_before_ms"], r["latency_after_ms"]
        lines.append(f"| {r['name']} | {r['cost_model']} | {r['speedup']:.3f}x | {before:.2f} | {after:.2f} | "
                     f"{before / after if after else 0:.3f}x |")
    lines += ["", f"Total time to produce this page: {seconds / 60:.1f} minutes.", ""]
    # Sections produced by other scripts are kept as they are: scripts/ort_results.py's and
    # scripts/eqsat_results.py's between their markers, and scripts/rules_table.sh's from its
    # heading on.
    old = open(path).read() if os.path.exists(path) else ""
    for name in ("ort-results", "eqsat-results"):
        begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
        if begin in old and end in old:
            section = old[old.index(begin):old.index(end) + len(end)]
            lines += [section, ""]
            old = old.replace(section, "")
    kept = "## Hand and generated rules"
    if kept in old:
        lines.append(old[old.index(kept):].rstrip("\n") + "\n")
    with open(path, "w") as f:
        f.write("\n".join(lines))
    print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
