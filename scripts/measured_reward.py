#!/usr/bin/env python3
"""A policy trained on the measured reward beside one trained on the analytic reward, both judged
in ONNX Runtime.

For each seed it trains two policies on one model with the same config except the reward: the
analytic cost's dense reward (`env.reward = "dense"`, `env.cost = "analytic"`), and the sparse
reward measured end to end in ONNX Runtime (`env.reward = "sparse"`, `env.reward_device = "ort"`,
one intra-op thread), whose measurements go through the run's store. Then every policy's greedy
rollout (`rewire optimize --search rl`) and the non-learned searches (greedy, backtracking, eqsat)
are judged in ONNX Runtime at one thread against the input (alternating rounds), and a markdown
table is printed: the predicted (analytic) speedup, the measured one, and what each training run
measured (graphs, cache hits, seconds). Runs are kept in --out-dir; a finished training run is
not trained again.

usage: /usr/bin/python3 scripts/measured_reward.py [--model xrlflow-bert] [--updates 20]
           [--seeds 1] [--out-dir runs/measured-reward] [--rewire build/cli/rewire]
"""

import argparse
import json
import os
import time

from logged_run import run, train_once

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def last_metrics(run_dir):
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        lines = [line for line in f if line.strip()]
    return json.loads(lines[-1])


def train(args, name, reward, seed, log):
    """Trains one policy (cached); its checkpoint, seconds and last metrics line."""
    run_dir = os.path.join(args.out_dir, "runs", name)
    config = os.path.join(args.out_dir, name + ".toml")
    sparse = reward == "measured"
    text = (f'[run]\ndir = "{run_dir}"\nseed = {seed}\nmax_updates = {args.updates}\n'
            f'threads = 1\n\n[env]\nmodels = ["{args.model}"]\nhorizon = {args.horizon}\n'
            f'max_candidates = 200\ncost = "analytic"\n'
            f'reward = "{"sparse" if sparse else "dense"}"\n'
            f'reward_device = "{"ort" if sparse else "cpu"}"\nreward_repeats = 5\n\n'
            '[gnn]\nhidden = 32\nlayers = 2\nheads = 4\n\n'
            f'[ppo]\nclip_vloss = false\nepisodes_per_update = {args.episodes}\n'
            'minibatch_size = 16\n')
    seconds = train_once(args.rewire, config, text, run_dir, log)
    return os.path.join(run_dir, "checkpoints", "latest.pt"), seconds, last_metrics(run_dir)


def judge(args, label, search_args, log):
    """`rewire optimize` of the model, judged in ONNX Runtime at one thread; its report."""
    report = os.path.join(args.out_dir, label + ".json")
    if not os.path.exists(report):
        run([args.rewire, "optimize", "-q", "--model", args.model, *search_args,
             "--runtime", "ort", "--runtime-threads", "1", "--runtime-candidates", "1",
             "--runtime-rounds", str(args.rounds), "--report", report], log)
    with open(report) as f:
        return json.load(f)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="xrlflow-bert")
    p.add_argument("--updates", type=int, default=20, help="PPO updates per policy")
    p.add_argument("--episodes", type=int, default=4, help="episodes per update")
    p.add_argument("--horizon", type=int, default=48)
    p.add_argument("--seeds", type=int, nargs="+", default=[1])
    p.add_argument("--rounds", type=int, default=5, help="alternating rounds of the judge")
    p.add_argument("--out-dir", default=os.path.join(REPO, "runs", "measured-reward"))
    p.add_argument("--rewire", default=os.path.join(REPO, "build", "cli", "rewire"))
    args = p.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    log = os.path.join(args.out_dir, "log.txt")
    start = time.time()

    rows = []
    for search in ["greedy", "backtrack", "eqsat"]:
        r = judge(args, search, ["--search", search], log)
        rows.append((search, r, None, None))
    for seed in args.seeds:
        for reward in ["analytic", "measured"]:
            name = f"{reward}.seed{seed}"
            ckpt, seconds, metrics = train(args, name, reward, seed, log)
            r = judge(args, "rl." + name, ["--search", "rl", "--policy", ckpt], log)
            rows.append((f"rl, policy trained on the {reward} reward (seed {seed})", r, seconds,
                         metrics))

    print(f"{args.model}, shipped rules; judged in ONNX Runtime at 1 thread, "
          f"{args.rounds} alternating rounds; {args.updates} PPO updates of {args.episodes} "
          f"episodes per policy\n")
    print("| search | predicted (analytic) | measured: result vs input | training: seconds | "
          "training: graphs measured (cache hits, seconds measuring) |")
    print("|---|---|---|---|---|")
    for label, r, seconds, m in rows:
        measured = f"{r['runtime_speedup']:.3f}x ({r['runtime_rounds_faster']}/" \
                   f"{r['runtime_rounds']} rounds faster)"
        train_s = f"{seconds:.0f}" if seconds is not None else "-"
        if m is not None and "measure/run_measured" in m:
            counts = (f"{m['measure/run_measured']:.0f} ({m.get('measure/cache_hits', 0):.0f} "
                      f"cache, {m.get('measure/memo_hits', 0):.0f} memo; "
                      f"{m['measure/run_seconds']:.1f} s)")
        else:
            counts = "0" if m is not None else "-"
        print(f"| {label} | {r['speedup']:.3f}x | {measured} | {train_s} | {counts} |")
    print(f"\n{time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
