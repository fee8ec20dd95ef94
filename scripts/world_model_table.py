#!/usr/bin/env python3
"""The world-model agent against PPO: real measurements (and real env steps) to a speedup.

For each graph, agent (`run.agent`: "ppo-gnn", "world-model"), reward and seed it trains one
policy (`rewire train`, cached), on one graph alone:
  - the measured reward: `env.reward = "sparse"` measured end to end in ONNX Runtime at one
    thread (`env.reward_device = "ort"`), `env.cost = "analytic"`;
  - the analytic reward: `env.reward = "dense"`, `env.cost = "analytic"`;
  - the learned reward: `env.reward = "dense"`, `env.cost = "learned"` (the kernel model rewire
    ships for ONNX Runtime CPU at one thread);
with a GNN of 32x2x4, horizon 48 and 200 candidates, --updates updates of --episodes real
episodes (--wm-episodes for the world model, which imagines the rest; `[world_model]` keys go
through --world-model-set KEY=VALUE). From each run's metrics.jsonl it makes a learning curve:
  x: the real measurements the run has made (`measure/run_measured`; where the run records none,
     as under the analytic reward, its real episodes so far), and the real env steps
     (`global_step`);
  y: the speedup of the update's real episodes, smoothed over 3 updates: measured, 1/(1-R/100)
     for the sparse reward's mean return R (R = 100 (M0 - MT) / M0), else `charts/speedup` (the
     analytic cost's prediction).
The markdown table (one row per graph, agent and reward; mean over seeds, then each seed) gives
the real measurements and env steps to reach 95% of ppo-gnn's final speedup on that graph and
reward (final: the mean of the last 3 updates, mean over seeds), the speedup at a fixed budget of
real measurements (the smaller of the agents' totals, each the least over its seeds), and the
final policy's greedy rollout (`rewire optimize --search rl`) predicted by the analytic cost and
measured end to end in ONNX Runtime at one thread (3 alternating rounds against the input).

Below the table: with --searches, those searches judged as the final policies are (RLFlow's
claim), and the world model's own quality on each update's new real episodes (its `world/*`
metrics: one-step reward error, return error, latent error, and the drift of imagined returns
over k = 1, 4, 16 steps).

It writes OUT_DIR/table.md, OUT_DIR/series.json (the curves of the measured reward, one panel per
graph, in `rewire plot`'s format) and the PNG (`rewire plot`, --png). Runs are kept in --out-dir;
a finished training run is not trained again unless its config changed.

usage: /usr/bin/python3 scripts/world_model_table.py [--graphs ...] [--agents ppo-gnn world-model]
           [--seeds 1 2 3] [--rewards measured analytic] [--updates 30] [--episodes 4]
           [--wm-episodes 2] [--world-model-set KEY=VALUE ...] [--reach 0.95]
           [--taso-pb graph_subst.pb]
           [--out-dir runs/world-model-table] [--png docs/world_model_measurements.png]
           [--dry-run] [--from-dir] [--self-test]
"""

import argparse
import json
import math
import os
import re
import statistics
import sys
import time

from logged_run import model_flags, run, train_once

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# X-RLflow's graphs and TASO's examples: with --taso-pb they are trained and judged in TASO's
# space (TASO's rules, as scripts/xrlflow_table.py), the zoo's transformer with the shipped rules.
GRAPHS = ["xrlflow-bert", "taso-bert", "nasrnn", "xrlflow-squeezenet", "bert:layers=2"]
TASO_SPACE = ("xrlflow-", "taso-", "nasrnn")
AGENTS = ["ppo-gnn", "world-model"]
BASELINE = "ppo-gnn"
SMOOTH = 3  # updates in the moving average of a curve
FINAL = 3   # last updates whose mean is a run's final speedup


# ---------------------------------------------------------------------------------------------
# Curves and the table's figures (no training: --self-test checks them)
# ---------------------------------------------------------------------------------------------

def moving_average(ys, window=SMOOTH):
    """Each y replaced by the mean of the finite ys among it and the window-1 before it."""
    out = []
    for i in range(len(ys)):
        recent = [y for y in ys[max(0, i - window + 1):i + 1] if math.isfinite(y)]
        out.append(sum(recent) / len(recent) if recent else float("nan"))
    return out


def finite(v):
    return isinstance(v, (int, float)) and math.isfinite(v)


def curve(metrics, reward, episodes):
    """A run's learning curve from its metrics lines: lists of the real measurements, real env
    steps and raw and smoothed speedups after each update."""
    measurements, steps, raw = [], [], []
    for i, m in enumerate(metrics):
        measured = m.get("measure/run_measured")
        measurements.append(measured if finite(measured) and measured >= 0
                            else (i + 1) * episodes)
        steps.append(m.get("global_step", float("nan")))
        if reward == "measured":
            r = m.get("charts/episodic_return")
            raw.append(1 / (1 - r / 100) if finite(r) and r < 100 else float("nan"))
        else:
            s = m.get("charts/speedup")
            raw.append(s if finite(s) else float("nan"))
    return {"measurements": measurements, "steps": steps, "raw": raw,
            "speedup": moving_average(raw)}


def final_speedup(c):
    """The mean of the last FINAL updates' speedups (nan without any)."""
    tail = [y for y in c["raw"][-FINAL:] if math.isfinite(y)]
    return sum(tail) / len(tail) if tail else float("nan")


def first_reach(c, target):
    """(measurements, env steps) at the first update whose smoothed speedup reaches target;
    None when none does."""
    for x, s, y in zip(c["measurements"], c["steps"], c["speedup"]):
        if math.isfinite(y) and y >= target:
            return x, s
    return None


def at_budget(c, budget):
    """The smoothed speedup at the last update whose measurements are within budget (nan when
    even the first update measured more)."""
    value = float("nan")
    for x, y in zip(c["measurements"], c["speedup"]):
        if x <= budget:
            value = y
    return value


def mean_curve(curves):
    """The seeds' curves averaged update by update (x and y), over the updates all of them have."""
    n = min(len(c["speedup"]) for c in curves)

    def mean(vs):
        vs = [v for v in vs if math.isfinite(v)]
        return statistics.fmean(vs) if vs else float("nan")
    return {k: [mean([c[k][i] for c in curves]) for i in range(n)]
            for k in ("measurements", "steps", "speedup")}


def num(v, fmt="{:.0f}"):
    return fmt.format(v) if finite(v) else "-"


def seeds_cell(values, fmt="{:.0f}", missing="not reached"):
    """"mean [v1, v2, v3]" over seeds; a None value is `missing` and left out of the mean, which
    then says how many seeds it counts."""
    shown = [missing if v is None else num(v, fmt) for v in values]
    got = [v for v in values if v is not None and finite(v)]
    if not got:
        head = missing if all(v is None for v in values) else "-"
    else:
        head = num(statistics.fmean(got), fmt)
        if len(got) < len(values):
            head += f" ({len(got)}/{len(values)} seeds)"
    return head if len(values) == 1 else f"{head} [{', '.join(shown)}]"


def rows_of(results, graphs, agents, rewards, reach):
    """The table's rows and each (graph, reward)'s target and budget. `results` maps (graph,
    agent, reward) to a list over seeds of {"curve", "report", "seconds"}."""
    rows, notes = [], {}
    for graph in graphs:
        for reward in rewards:
            base = results.get((graph, BASELINE, reward), [])
            finals = [final_speedup(r["curve"]) for r in base]
            base_final = statistics.fmean(finals) if finals and all(map(math.isfinite, finals)) \
                else float("nan")
            target = reach * base_final
            totals = [min(r["curve"]["measurements"][-1] for r in results[(graph, a, reward)])
                      for a in agents if results.get((graph, a, reward))]
            budget = min(totals) if totals else float("nan")
            notes[(graph, reward)] = (base_final, target, budget)
            for agent in agents:
                runs = results.get((graph, agent, reward))
                if not runs:
                    continue
                reached = [first_reach(r["curve"], target) if math.isfinite(target) else None
                           for r in runs]
                judged = [r["report"] for r in runs]
                rows.append({
                    "graph": graph, "agent": agent, "reward": reward,
                    "to_target": seeds_cell([x[0] if x else None for x in reached]),
                    "steps_to_target": seeds_cell([x[1] if x else None for x in reached]),
                    "at_budget": seeds_cell([at_budget(r["curve"], budget) for r in runs],
                                            "{:.3f}x", "-"),
                    "final": seeds_cell([final_speedup(r["curve"]) for r in runs], "{:.3f}x", "-"),
                    "measurements": seeds_cell([r["curve"]["measurements"][-1] for r in runs]),
                    "predicted": seeds_cell([j.get("speedup") if j else None for j in judged],
                                            "{:.3f}x", "-"),
                    "measured": seeds_cell([j.get("runtime_speedup") if j else None
                                            for j in judged], "{:.3f}x", "-"),
                    "rounds": ", ".join(f"{j.get('runtime_rounds_faster', '-')}/"
                                        f"{j.get('runtime_rounds', '-')}" if j else "-"
                                        for j in judged),
                    "seconds": seeds_cell([r["seconds"] for r in runs]),
                })
    return rows, notes


def render(rows, notes, args):
    reach = f"{args.reach * 100:.0f}%"
    lines = [
        f"World model against PPO: {args.updates} updates per policy, {args.episodes} real "
        f"episodes per update for ppo-gnn and {args.wm_episodes} for world-model, seeds "
        f"{', '.join(map(str, args.seeds))}; cells: mean over seeds [each seed].", "",
        "| graph | agent | reward | real measurements to " + reach + " of ppo-gnn's final | "
        "real env steps to it | speedup at the budget | final speedup (last 3 updates) | "
        "real measurements in all | final policy: predicted | final policy: measured in ORT "
        "(rounds faster) | training s |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['graph']} | {r['agent']} | {r['reward']} | {r['to_target']} | "
                     f"{r['steps_to_target']} | {r['at_budget']} | {r['final']} | "
                     f"{r['measurements']} | {r['predicted']} | {r['measured']} ({r['rounds']}) | "
                     f"{r['seconds']} |")
    lines += ["", "Targets and budgets (ppo-gnn's final speedup, mean over seeds; the budget is "
              "the smaller of the agents' real measurements, each agent's least over its seeds):",
              ""]
    for (graph, reward), (final, target, budget) in notes.items():
        lines.append(f"- {graph}, {reward}: ppo-gnn's final {num(final, '{:.3f}x')}, target "
                     f"{num(target, '{:.3f}x')}, budget {num(budget)} real measurements")
    lines += ["", "Speedups of the training curves are those of each update's real episodes, "
              "smoothed over 3 updates: under the measured reward 1/(1-R/100) for the update's "
              "mean return R (measured end to end), under the analytic reward the analytic cost's "
              "prediction. Where a run records no measurements (the analytic reward) its real "
              "episodes stand for them."]
    return "\n".join(lines) + "\n"


# The world model's own quality, from its runs' `world/*` metrics: each update logs them on its
# new real episodes before the model trains on them (update 1 has no model to judge).
DRIFT_K = (1, 4, 16)
LAST = 5  # the last updates of the "(last 5)" column


def mean_metric(runs, key, last=None, transform=None):
    """The mean of a metric over the runs' updates that log a finite value (the last `last` of
    each run when given); nan without any."""
    values = []
    for r in runs:
        ms = r["metrics"][-last:] if last else r["metrics"]
        values += [transform(m[key]) if transform else m[key] for m in ms if finite(m.get(key))]
    return statistics.fmean(values) if values else float("nan")


def quality_rows(results, graphs, rewards):
    """Per graph and reward, the world-model runs' quality: one-step reward error and whole-episode
    return error (percentage points), the latent (dynamics) error relative to the successors'
    mean square, and the k-step drift of imagined returns (k = 1, 4, 16) on the exact graphs and
    in the latent dream; under the measured reward only whole episodes carry a label."""
    rows = []
    for graph in graphs:
        for reward in rewards:
            runs = [r for r in results.get((graph, "world-model", reward), []) if r["metrics"]]
            if not runs:
                continue
            judged_runs = [{"metrics": r["metrics"][1:]} for r in runs]
            row = {"graph": graph, "reward": reward, "runs": len(runs),
                   "reward_error": mean_metric(judged_runs, "world/reward_error"),
                   "return_error": mean_metric(judged_runs, "world/return_error"),
                   "return_error_last": mean_metric(judged_runs, "world/return_error", LAST),
                   "real_return": mean_metric(judged_runs, "charts/episodic_return",
                                              transform=abs),
                   "latent_error": mean_metric(judged_runs, "world/latent_error")}
            for k in DRIFT_K:
                for kind in ("exact", "latent"):
                    row[f"{kind}_k{k}"] = mean_metric(judged_runs, f"world/drift_{kind}_k{k}")
            rows.append(row)
    return rows


def render_quality(rows):
    if not rows:
        return ""
    ks = "/".join(map(str, DRIFT_K))
    lines = ["", "The world model's quality on each update's new real episodes, before it trains "
             "on them (`world/*` metrics; mean over updates 2 to the last of every world-model "
             "run; returns and errors in percentage points of the input's cost; drift: mean "
             "|imagined - real| return over k-step windows, dense reward only):", "",
             "| graph | reward | runs | one-step reward error | return error (all updates) | "
             f"(last {LAST}) | mean \\|real return\\| | latent error (relative) | drift k={ks}, "
             f"exact graphs | drift k={ks}, latent dream |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        exact = " / ".join(num(r[f"exact_k{k}"], "{:.4f}") for k in DRIFT_K)
        latent = " / ".join(num(r[f"latent_k{k}"], "{:.4f}") for k in DRIFT_K)
        lines.append(
            f"| {r['graph']} | {r['reward']} | {r['runs']} | {num(r['reward_error'], '{:.4f}')} | "
            f"{num(r['return_error'], '{:.3f}')} | {num(r['return_error_last'], '{:.3f}')} | "
            f"{num(r['real_return'], '{:.1f}')} | {num(r['latent_error'], '{:.4f}')} | {exact} | "
            f"{latent} |")
    return "\n".join(lines) + "\n"


def series_json(results, graphs, agents, rewards, notes, reach):
    """`rewire plot`'s input: a panel per graph, a line per agent (mean over seeds; empty without
    runs, so that an agent has one colour in every panel) and ppo-gnn's target, of the measured
    reward (the first reward when it is not among them)."""
    reward = "measured" if "measured" in rewards else rewards[0]
    measured = reward == "measured"
    panels = []
    for graph in graphs:
        series = []
        for agent in agents:
            runs = results.get((graph, agent, reward))
            if not runs:
                series.append({"label": agent, "x": [], "y": []})
                continue
            c = mean_curve([r["curve"] for r in runs])
            series.append({"label": agent,
                           "x": [v if math.isfinite(v) else None for v in c["measurements"]],
                           "y": [v if math.isfinite(v) else None for v in c["speedup"]]})
        final, target, budget = notes.get((graph, reward), (float("nan"),) * 3)
        xs = [x for s in series for x in s["x"] if x is not None]
        if xs and math.isfinite(target):
            series.append({"label": f"{reach * 100:.0f}% of {BASELINE}'s final",
                           "x": [min(xs), max(xs)], "y": [target, target]})
        panels.append({"title": graph, "x_label": "real measurements" if measured
                       else "real episodes",
                       "y_label": "speedup (x)",
                       "series": series})
    what = "Measured" if measured else "Predicted"
    return {"title": f"{what} speedup of real episodes, mean of seeds", "panels": panels}


# ---------------------------------------------------------------------------------------------
# Runs
# ---------------------------------------------------------------------------------------------

# How final policies and searches are judged: the final graph only, in ONNX Runtime at one thread,
# against the input in 3 alternating rounds.
JUDGE = ["--runtime", "ort", "--runtime-threads", "1", "--runtime-candidates", "1",
         "--runtime-rounds", "3"]


def tag(graph):
    """A file-name form of a model spec ("bert:layers=2" -> "bert-layers2")."""
    return re.sub(r"[^A-Za-z0-9_.-]", "", graph.replace(":", "-").replace(",", "-"))


def taso_space(args, graph):
    return args.taso_pb is not None and graph.startswith(TASO_SPACE)


def toml_value(text):
    """A --world-model-set value as TOML: numbers, booleans, quoted strings and arrays as given,
    anything else quoted."""
    if re.fullmatch(r"[+-]?\d+(\.\d*)?([eE][+-]?\d+)?|true|false|\".*\"|\[.*\]", text):
        return text
    return json.dumps(text)


def config_text(args, graph, agent, reward, seed, run_dir):
    sparse = reward == "measured"
    episodes = args.wm_episodes if agent == "world-model" else args.episodes
    rules = f'rules = "{args.taso_rules}"\n' if taso_space(args, graph) else ""
    text = (f'[run]\ndir = "{run_dir}"\nseed = {seed}\nmax_updates = {args.updates}\n'
            f'threads = 1\nagent = "{agent}"\n\n'
            f'[env]\nmodels = ["{graph}"]\nhorizon = 48\nmax_candidates = 200\n'
            f'cost = "{"learned" if reward == "learned" else "analytic"}"\n{rules}'
            f'reward = "{"sparse" if sparse else "dense"}"\n'
            f'reward_device = "{"ort" if sparse else "cpu"}"\nreward_repeats = 5\n\n'
            '[gnn]\nhidden = 32\nlayers = 2\nheads = 4\n\n'
            f'[ppo]\nclip_vloss = false\nepisodes_per_update = {episodes}\n'
            'minibatch_size = 16\n')
    if agent == "world-model" and args.world_model_set:
        text += "\n[world_model]\n" + "".join(
            f"{k} = {toml_value(v)}\n" for k, v in args.world_model_set)
    return text


class Runs:
    def __init__(self, args):
        self.args = args
        self.log = os.path.join(args.out_dir, "log.txt")
        self.commands = []  # what --dry-run prints

    def cmd(self, cmd, cached):
        self.commands.append(("# cached: " if cached else "") + " ".join(cmd))

    def train(self, graph, agent, reward, seed):
        """Trains one policy (cached; again when its config changed); its run dir and seconds."""
        a = self.args
        name = f"{tag(graph)}.{agent}.{reward}.seed{seed}"
        run_dir = os.path.join(a.out_dir, "runs", name)
        config = os.path.join(a.out_dir, "configs", name + ".toml")
        text = config_text(a, graph, agent, reward, seed, run_dir)
        done = os.path.join(run_dir, "trained.json")
        stale = os.path.exists(config) and read_text(config) != text
        cached = os.path.exists(done) and not stale
        self.cmd([a.rewire, "train", "-q", "--config", config], cached)
        if a.dry_run or a.from_dir or a.judge_only:
            seconds = json.loads(read_text(done))["seconds"] if os.path.exists(done) else None
            return run_dir, seconds
        if stale:
            for f in (done, self.report_path(name)):
                if os.path.exists(f):
                    os.remove(f)
        os.makedirs(os.path.dirname(config), exist_ok=True)
        return run_dir, train_once(a.rewire, config, text, run_dir, self.log)

    def report_path(self, name):
        return os.path.join(self.args.out_dir, "judge", name + ".json")

    def judge(self, graph, run_dir):
        """The final policy's greedy rollout judged in ONNX Runtime at one thread; its report."""
        a = self.args
        report = self.report_path(os.path.basename(run_dir))
        rules = ["--rules", a.taso_rules] if taso_space(a, graph) else []
        cmd = [a.rewire, "optimize", "-q", *model_flags(graph), *rules, "--search", "rl",
               "--policy", os.path.join(run_dir, "checkpoints", "latest.pt"), *JUDGE,
               "--report", report]
        self.cmd(cmd, os.path.exists(report))
        if not os.path.exists(report):
            if a.dry_run or a.from_dir:
                return None
            os.makedirs(os.path.dirname(report), exist_ok=True)
            run(cmd, self.log)
        with open(report) as f:
            return json.load(f)


def judge_search(runs, graph, search):
    """`search` run on `graph` with the agents' rules and judged as their final policies are
    (ONNX Runtime, one thread, 3 rounds, the final graph only); its report (cached)."""
    a = runs.args
    report = os.path.join(a.out_dir, "judge", f"{tag(graph)}.search-{search}.json")
    rules = ["--rules", a.taso_rules] if taso_space(a, graph) else []
    cmd = [a.rewire, "optimize", "-q", *model_flags(graph), *rules, "--search", search,
           *JUDGE, "--report", report]
    runs.cmd(cmd, os.path.exists(report))
    if not os.path.exists(report):
        if a.dry_run or a.from_dir or a.no_judge:
            return None
        os.makedirs(os.path.dirname(report), exist_ok=True)
        run(cmd, runs.log)
    with open(report) as f:
        return json.load(f)


def render_searches(judged, results, args):
    """RLFlow's claim: the agents' final policies against the searches, judged alike."""
    # The world-model agent's runs under the measured reward, or the analytic one's without them.
    reward = ("measured" if any(results.get((g, "world-model", "measured"))
                                for g in args.graphs) else "analytic")
    lines = ["", "Searches judged as the final policies are (ONNX Runtime, one thread, 3 rounds; "
             "predicted by the analytic model), against the world-model agent's final policies' "
             f"mean measured speedup, trained under the {reward} reward:", "",
             "| graph | search | predicted | measured in ORT (rounds faster) | world-model's "
             "measured mean | world-model vs the best search |", "|---|---|---:|---:|---:|---:|"]
    for graph in args.graphs:
        wm = [r["report"].get("runtime_speedup") for r in
              results.get((graph, "world-model", reward), []) if r["report"]]
        wm_mean = statistics.fmean(wm) if wm else None
        best = max((j.get("runtime_speedup") or 0 for (g, _), j in judged.items()
                    if g == graph and j), default=0)
        for (g, search), j in judged.items():
            if g != graph or not j:
                continue
            vs = (f"{100.0 * (wm_mean / best - 1):+.1f}%"
                  if wm_mean and best and j.get("runtime_speedup") == best else "")
            lines.append(
                f"| {graph} | {search} | {num(j.get('speedup'), '{:.3f}x')} | "
                f"{num(j.get('runtime_speedup'), '{:.3f}x')} "
                f"({j.get('runtime_rounds_faster', '-')}/{j.get('runtime_rounds', '-')}) | "
                f"{num(wm_mean, '{:.3f}x')} | {vs} |")
    return "\n".join(lines) + "\n"


def read_text(path):
    with open(path) as f:
        return f.read()


def read_metrics(run_dir):
    path = os.path.join(run_dir, "metrics.jsonl")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def self_test():
    """The curve and table logic on made-up metrics."""
    m = [{"global_step": 48 * (i + 1), "charts/episodic_return": r, "charts/speedup": 1 + i / 10,
          "measure/run_measured": 3 * (i + 1)} for i, r in enumerate([0, 20, 50, 50, 50])]
    c = curve(m, "measured", 4)
    assert c["measurements"] == [3, 6, 9, 12, 15], c
    assert [round(y, 6) for y in c["raw"]] == [1, 1.25, 2, 2, 2], c
    assert round(c["speedup"][2], 6) == round((1 + 1.25 + 2) / 3, 6)
    assert final_speedup(c) == 2
    assert first_reach(c, 1.9) == (15, 240) and first_reach(c, 2.5) is None
    assert at_budget(c, 7) == c["speedup"][1] and math.isnan(at_budget(c, 2))
    a = curve([{k: v for k, v in x.items() if k != "measure/run_measured"} for x in m],
              "analytic", 4)
    assert a["measurements"] == [4, 8, 12, 16, 20] and a["raw"][4] == 1.4, a
    assert seeds_cell([None, 10, 20]) == "15 (2/3 seeds) [not reached, 10, 20]"
    assert seeds_cell([None]) == "not reached"
    results = {("g", "ppo-gnn", "measured"): [{"curve": c, "report": None, "seconds": 1}],
               ("g", "world-model", "measured"): [{"curve": curve(m[:3], "measured", 2),
                                                   "report": {"speedup": 1.5}, "seconds": 2}]}
    rows, notes = rows_of(results, ["g"], AGENTS, ["measured"], 0.95)
    assert notes[("g", "measured")] == (2, 1.9, 9), notes
    assert rows[0]["to_target"] == "15" and rows[1]["to_target"] == "not reached", rows
    assert rows[1]["predicted"] == "1.500x" and rows[0]["predicted"] == "-", rows
    s = series_json(results, ["g", "h"], AGENTS, ["measured"], notes, 0.95)
    assert [x["label"] for x in s["panels"][0]["series"]] == AGENTS + ["95% of ppo-gnn's final"]
    assert [x["label"] for x in s["panels"][1]["series"]] == AGENTS, s
    wm = [{"charts/episodic_return": -r, "world/return_error": e, "world/reward_error": None,
           "world/drift_exact_k4": d} for r, e, d in [(9, None, None), (4, 2, 0.5), (8, 6, 1.5)]]
    results[("g", "world-model", "measured")][0]["metrics"] = wm
    results[("g", "ppo-gnn", "measured")][0]["metrics"] = m
    q = quality_rows(results, ["g"], ["measured"])
    assert len(q) == 1 and q[0]["runs"] == 1 and q[0]["return_error"] == 4, q
    assert q[0]["real_return"] == 6 and q[0]["exact_k4"] == 1 and math.isnan(q[0]["reward_error"])
    assert "| g | measured | 1 | - | 4.000 |" in render_quality(q), render_quality(q)
    print("self-test: ok")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--graphs", nargs="+", default=GRAPHS,
                   help="zoo models or model specs (name:key=value,...), each trained alone "
                   f"(default: {' '.join(GRAPHS)})")
    p.add_argument("--agents", nargs="+", default=AGENTS,
                   help=f"run.agent values (default: {' '.join(AGENTS)}); {BASELINE} sets the "
                   "targets")
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    p.add_argument("--rewards", nargs="+", default=["measured", "analytic"],
                   choices=["measured", "analytic", "learned"])
    p.add_argument("--updates", type=int, default=30, help="updates per policy")
    p.add_argument("--episodes", type=int, default=4, help="real episodes per update (ppo-gnn)")
    p.add_argument("--wm-episodes", type=int, default=2,
                   help="real episodes per update of the world-model agent")
    p.add_argument("--world-model-set", action="append", default=[], metavar="KEY=VALUE",
                   help="a [world_model] key of the world-model agent's config (repeatable), "
                   "e.g. imagined_episodes=16, model_epochs=4, branch_depth=8, imagined_horizon=48")
    p.add_argument("--reach", type=float, default=0.95,
                   help="the target, a fraction of ppo-gnn's final speedup (default 0.95)")
    p.add_argument("--taso-pb", help="TASO's graph_subst.pb: X-RLflow's and TASO's graphs get "
                   "TASO's rules (configs/rules/taso and the imported file), as "
                   "scripts/xrlflow_table.py; without it every graph gets the shipped rules")
    p.add_argument("--out-dir", default=os.path.join(REPO, "runs", "world-model-table"),
                   help="runs, judge reports, table.md, series.json and log.txt")
    p.add_argument("--png", default=os.path.join(REPO, "docs", "world_model_measurements.png"),
                   help="the curves' PNG (rewire plot)")
    p.add_argument("--rewire", default=os.path.join(REPO, "build", "cli", "rewire"))
    p.add_argument("--dry-run", action="store_true", help="print the commands only")
    p.add_argument("--from-dir", action="store_true",
                   help="train and judge nothing: the table of the runs already in --out-dir")
    p.add_argument("--searches", nargs="*", default=[],
                   help="searches (e.g. greedy backtrack eqsat) run on each graph and judged as "
                        "the final policies are, for RLFlow's claim (the best search against the "
                        "world-model agent)")
    p.add_argument("--judge-only", action="store_true",
                   help="train nothing: judge the runs already trained (on a quiet machine) and "
                        "make the table")
    p.add_argument("--no-judge", action="store_true",
                   help="train only (judging, which measures, waits for a later run on a quiet "
                        "machine: training under the analytic reward measures nothing)")
    p.add_argument("--self-test", action="store_true", help="check the table's logic and exit")
    args = p.parse_args()
    if args.self_test:
        self_test()
        return
    sets = []
    for item in args.world_model_set:
        key, eq, value = item.partition("=")
        if not eq or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
            p.error(f"--world-model-set {item}: expected KEY=VALUE")
        sets.append((key, value))
    args.world_model_set = sets
    start = time.time()
    args.out_dir = os.path.abspath(args.out_dir)
    if not args.dry_run:
        os.makedirs(args.out_dir, exist_ok=True)
    runs = Runs(args)

    args.taso_rules = None
    if args.taso_pb:
        imported = os.path.join(args.out_dir, "taso.rules")
        runs.cmd([args.rewire, "rules", "import-taso", args.taso_pb, "--out", imported],
                 os.path.exists(imported))
        if not os.path.exists(imported) and not (args.dry_run or args.from_dir):
            run([args.rewire, "rules", "import-taso", args.taso_pb, "--out", imported], runs.log)
        args.taso_rules = "configs/rules/taso," + imported

    results = {}
    for graph in args.graphs:
        for reward in args.rewards:
            for agent in args.agents:
                for seed in args.seeds:
                    run_dir, seconds = runs.train(graph, agent, reward, seed)
                    if (args.from_dir or args.judge_only) and seconds is None:
                        continue  # not trained to the end (still running, or stopped)
                    if args.no_judge:
                        continue
                    report = runs.judge(graph, run_dir)
                    metrics = read_metrics(run_dir)
                    if not metrics:
                        continue
                    episodes = args.wm_episodes if agent == "world-model" else args.episodes
                    results.setdefault((graph, agent, reward), []).append(
                        {"curve": curve(metrics, reward, episodes), "report": report,
                         "metrics": metrics,
                         "seconds": seconds if seconds is not None else float("nan")})

    judged_searches = {}
    for graph in args.graphs:
        for search in args.searches:
            judged_searches[(graph, search)] = judge_search(runs, graph, search)

    if args.no_judge and not args.dry_run:
        print(f"trained; judge and tabulate with the same command without --no-judge "
              f"({time.time() - start:.0f} s)")
        return
    series_path = os.path.join(args.out_dir, "series.json")
    plot_cmd = [args.rewire, "plot", "--series", series_path, "--out", args.png, "--columns",
                str(min(3, len(args.graphs)))]
    if args.dry_run:
        runs.cmd(plot_cmd, False)
        for agent in args.agents:
            first = config_text(args, args.graphs[0], agent, args.rewards[0], args.seeds[0],
                                "RUN_DIR")
            print(f"# the config of {agent}'s first run:\n{first}")
        print("\n".join(runs.commands))
        return

    rows, notes = rows_of(results, args.graphs, args.agents, args.rewards, args.reach)
    table = render(rows, notes, args)
    if args.searches:
        table += render_searches(judged_searches, results, args)
    table += render_quality(quality_rows(results, args.graphs, args.rewards))
    with open(os.path.join(args.out_dir, "table.md"), "w") as f:
        f.write(table)
    print(table)
    with open(series_path, "w") as f:
        json.dump(series_json(results, args.graphs, args.agents, args.rewards, notes, args.reach),
                  f, indent=1)
    if results:
        run(plot_cmd, runs.log)
        print(f"wrote {os.path.join(args.out_dir, 'table.md')}, {series_path}, {args.png}")
    else:
        print("no finished runs: nothing to plot", file=sys.stderr)
    print(f"{time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
