#!/usr/bin/python3
"""X-RLflow's experiment in X-RLflow's space: the table of docs/rl.md ("Reproducing X-RLflow").

TASO's rules (its graph_subst.pb, converted by `rewire rules import-taso`, plus
configs/rules/taso), X-RLflow's graphs (the xrlflow-* zoo models), TASO's kind of cost (the
analytic gtx1080 profile): per graph, greedy search, TASO's backtracking (alpha 1.05, budgets 100
and 1000), equality saturation with ILP extraction, and the learned searches (the policy's
greedy rollout, `--search rl`; the best of it and 8 sampled rollouts; the guided search at
budget 1000, seeded by greedy search, the policy's rollout and 8 sampled ones) with a policy
trained on that graph alone, as X-RLflow trains, and (unless --no-across) with one policy trained
on all of them; each learned figure over several training seeds (median, min, max). Two of
TASO's own example graphs join them: NASRNN with policies of its own, and TASO's bert optimised
with the policies of its X-RLflow twin; neither is seen by the policy trained across graphs.

With --realistic the same table is made for the zoo's realistic transformers (bert, vit, dalle,
tt) with rewire's hand rules and the generator's transformer rules, under the analytic h100 cost;
their policies are trained on the 2-layer versions of the models (X-RLflow's generalisation
setting: train small, optimise the full model), which keeps the table within hours on 2 cores.

Every run keeps its report in OUT_DIR, and a run whose report is there is not run again, so an
interrupted table resumes. The table is printed and written to OUT_DIR/table.md.

usage: scripts/xrlflow_table.py --taso-pb graph_subst.pb [--out-dir DIR] [--seeds 1 2 3]
           [--updates N] [--models M ...] [--no-across] [--realistic]
"""
import argparse
import json
import os
import statistics
import subprocess
import time

from logged_run import run

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Per graph: the model spec a policy is trained on, the training horizon and the search horizon
# (about twice the rewrites greedy search takes there).
XRLFLOW = {
    "xrlflow-bert": ("xrlflow-bert", 48, 48),
    "xrlflow-vit": ("xrlflow-vit", 64, 64),
    "xrlflow-dalle": ("xrlflow-dalle", 48, 48),
    "xrlflow-tt": ("xrlflow-tt", 64, 64),
    "xrlflow-resnext50": ("xrlflow-resnext50", 16, 16),
    "xrlflow-inceptionv3": ("xrlflow-inceptionv3", 40, 40),
    "xrlflow-squeezenet": ("xrlflow-squeezenet", 32, 32),
}
# TASO's own example graphs with a policy of their own (and unseen by the policy trained across
# X-RLflow's graphs): NASRNN, where equality saturation shows depth that greedy search misses.
EXAMPLES = {
    "nasrnn": ("nasrnn", 80, 96),
}
# PPO updates per policy where the default is too many for 2 cores: NASRNN's episodes are about
# 70 steps over about 270 candidates each, a minute per update on one core.
UPDATES = {"nasrnn": 30}
# TASO's own example graphs that have a twin among X-RLflow's: optimised with the twin's policies,
# which never saw them (a graph of the same family at other shapes: X-RLflow's generalisation).
TRANSFER = {
    "taso-bert": "xrlflow-bert",
}
REALISTIC = {
    "bert": ("bert:layers=2", 32, 100),
    "vit": ("vit:layers=2", 32, 150),
    "dalle": ("dalle:layers=2", 16, 40),
    "tt": ("tt:layers=2", 48, 170),
}


class Space:
    """The rules, cost and models of one table."""

    def __init__(self, args, realistic):
        self.rewire = args.rewire
        self.out = os.path.join(args.out_dir, "realistic" if realistic else "xrlflow")
        os.makedirs(self.out, exist_ok=True)
        self.log = os.path.join(self.out, "commands.log")
        if realistic:
            self.rules = "configs/rules,configs/rules/generated/transformer"
            self.cost = ["--cost", "analytic", "--device", "h100"]
            self.device = "h100"
            self.models = {m: h for m, h in REALISTIC.items() if not args.models or m in args.models}
        else:
            taso = os.path.join(self.out, "taso.rules")
            if not os.path.exists(taso):
                run([self.rewire, "rules", "import-taso", args.taso_pb, "--out", taso], self.log)
            self.rules = "configs/rules/taso," + taso
            self.cost = ["--cost", "analytic", "--device", "gtx1080"]
            self.device = "gtx1080"
            self.models = {m: h for m, h in XRLFLOW.items() if not args.models or m in args.models}
        self.examples = {} if realistic else {
            m: h for m, h in EXAMPLES.items() if not args.models or m in args.models}
        # graph -> the graph whose policies optimise it
        self.transfer = {} if realistic else {
            m: twin for m, twin in TRANSFER.items() if twin in self.models}

    def rows(self):
        """The table's graphs in order: X-RLflow's, TASO's examples, the graphs of other policies."""
        return list(self.models) + list(self.examples) + list(self.transfer)

    def optimize(self, name, model, search):
        """`rewire optimize` once; its report (cached in OUT_DIR)."""
        report = os.path.join(self.out, name + ".json")
        if not os.path.exists(report):
            run([self.rewire, "optimize", "--model", model, "--rules", self.rules, *self.cost,
                 "-q", "--report", report, *search], self.log)
        with open(report) as f:
            return json.load(f)

    def train(self, name, models, horizon, seed, updates):
        """`rewire train` of one policy; its checkpoint and training seconds (cached)."""
        run_dir = os.path.join(self.out, "runs", name)
        ckpt = os.path.join(run_dir, "checkpoints", "latest.pt")
        done = os.path.join(run_dir, "trained.json")
        if not os.path.exists(done):
            config = os.path.join(self.out, name + ".toml")
            listed = ", ".join(f'"{m}"' for m in models)
            with open(config, "w") as f:
                f.write(f'[run]\ndir = "{run_dir}"\nseed = {seed}\nmax_updates = {updates}\n'
                        f'threads = 1\n\n[env]\nmodels = [{listed}]\nhorizon = {horizon}\n'
                        f'max_candidates = 200\ncost = "analytic"\ndevice = "{self.device}"\n'
                        f'rules = "{self.rules}"\n\n[gnn]\nhidden = 32\nlayers = 2\nheads = 4\n\n'
                        '[ppo]\nclip_vloss = false\nepisodes_per_update = 8\nminibatch_size = 16\n')
            if os.path.exists(run_dir):
                subprocess.run(["rm", "-rf", run_dir])
            start = time.time()
            run([self.rewire, "train", "-q", "--config", config], self.log)
            with open(done, "w") as f:
                json.dump({"seconds": time.time() - start}, f)
        with open(done) as f:
            return ckpt, json.load(f)["seconds"]


def speed(initial, cost):
    return initial / cost if cost else float("nan")


def spread(values):
    """median [min, max] of speedups."""
    if not values:
        return "-"
    med = statistics.median(values)
    if len(values) == 1:
        return f"{med:.3f}x"
    return f"{med:.3f}x [{min(values):.3f}, {max(values):.3f}]"


def make_table(space, args):
    own = {**space.models, **space.examples}
    rows = space.rows()
    baselines, learned = {}, {m: {} for m in rows}
    for m in rows:
        baselines[m] = {
            "greedy": space.optimize(f"{m}.greedy", m, ["--search", "greedy"]),
            "bt100": space.optimize(f"{m}.bt100", m, ["--search", "backtrack", "--alpha", "1.05",
                                                      "--budget", "100"]),
            "bt1000": space.optimize(f"{m}.bt1000", m, ["--search", "backtrack", "--alpha", "1.05",
                                                        "--budget", "1000"]),
            "eqsat": space.optimize(f"{m}.eqsat", m, ["--search", "eqsat", "--extract", "ilp"]),
        }
    trainings = {}
    for seed in args.seeds:
        policies = {}
        for m, (spec, train_horizon, _) in own.items():
            policies[m] = space.train(f"{m}.seed{seed}", [spec], train_horizon, seed,
                                      UPDATES.get(m, args.updates))
        kinds = {}
        if args.across:
            # The cache is keyed by name: a subset of the graphs gets a policy of its own.
            every = set(space.models) == set(REALISTIC if args.realistic else XRLFLOW)
            name = "all" if every else "all." + "+".join(
                m.replace("xrlflow-", "") for m in space.models)
            kinds["all"] = space.train(f"{name}.seed{seed}", [v[0] for v in space.models.values()],
                                       max(v[1] for v in space.models.values()), seed,
                                       args.updates * 2)
        for m in rows:
            twin = space.transfer.get(m, m)
            horizon = own[twin][2]
            for kind, (ckpt, seconds) in [("own", policies[twin])] + list(kinds.items()):
                if m == twin:
                    trainings.setdefault(kind, []).append(seconds)
                for search, extra in (("rl", ["--search", "rl", "--horizon", str(horizon)]),
                                      ("rl8", ["--search", "rl", "--horizon", str(horizon),
                                               "--samples", "8"]),
                                      ("guided", ["--search", "guided", "--budget", "1000",
                                                  "--horizon", str(horizon), "--samples", "8"])):
                    r = space.optimize(f"{m}.{kind}.seed{seed}.{search}", m,
                                       extra + ["--policy", ckpt])
                    learned[m].setdefault((kind, search), []).append(r)
    return baselines, learned, trainings


# The learned searches of each policy: the greedy-policy rollout, the best of it and 8 sampled
# rollouts, and the guided search (budget 1000 expanded graphs, backtracking's, its rollouts and
# greedy search's steps included; its beam seeded also by 8 sampled rollouts).
LEARNED_SEARCHES = ("rl", "rl8", "guided")
LEARNED_NAMES = ("rl", "rl best of 9", "guided")


def render(space, baselines, learned, trainings, args, realistic):
    kinds = ["own", "all"] if args.across else ["own"]
    title = ("the zoo's realistic transformers, rewire's hand rules + generated transformer rules, "
             "analytic h100" if realistic else
             "X-RLflow's graphs, TASO's rules, analytic gtx1080")
    lines = [f"Speedup over the input ({title}); learned figures: median [min, max] over seeds "
             f"{', '.join(map(str, args.seeds))}; search seconds in parentheses (medians).", "",
             "| graph | greedy | backtrack 100 | backtrack 1000 | eqsat (ILP) | " +
             " | ".join(f"{name} ({kind})" for kind in kinds for name in LEARNED_NAMES) +
             " | best learned vs backtrack 1000, worst seed |",
             "|---|---:|---:|---:|---:|" + "---:|" * (len(kinds) * len(LEARNED_NAMES)) + "---:|"]
    for m in space.rows():
        b = baselines[m]
        init = b["greedy"]["initial_cost_ms"]

        def base(key):
            r = b[key]
            return f"{speed(init, r['final_cost_ms']):.3f}x ({r['search_seconds']:.1f})"

        def learn(kind, search):
            rs = learned[m].get((kind, search), [])
            if not rs:
                return "-"
            secs = statistics.median([r["search_seconds"] for r in rs]) if rs else 0
            return f"{spread([speed(init, r['final_cost_ms']) for r in rs])} ({secs:.1f})"

        worst_best = None  # over seeds: the learned searches' best, the worst seed counted
        for i in range(len(args.seeds)):
            costs = [learned[m][k][i]["final_cost_ms"] for k in learned[m] if len(learned[m][k]) > i]
            if costs:
                worst_best = max(worst_best or 0, min(costs))
        bt = b["bt1000"]["final_cost_ms"]
        gain = f"{(1 - worst_best / bt) * 100:.1f}% lower cost" if worst_best else "-"
        cells = [learn(kind, search) for kind in kinds for search in LEARNED_SEARCHES]
        name = f"{m} (policies of {space.transfer[m]})" if m in space.transfer else m
        lines.append(f"| {name} | {base('greedy')} | {base('bt100')} | {base('bt1000')} | "
                     f"{base('eqsat')} | {' | '.join(cells)} | {gain} |")
    if space.transfer:
        lines.append("")
        lines.append("Rows marked \"policies of G\": TASO's example graph optimised with the policies "
                     "trained on G, which never saw it.")
    if args.across and (space.examples or space.transfer):
        lines.append("")
        lines.append("The (all) policies are trained on X-RLflow's graphs above: "
                     f"{' and '.join(list(space.examples) + list(space.transfer))} are unseen by them.")
    for kind, secs in sorted(trainings.items()):
        if kind == "own":
            what = "one policy per graph"
            fewer = [f"{m} {UPDATES[m]}" for m in {**space.models, **space.examples} if m in UPDATES]
            updates = f"{args.updates} updates" + (f"; {', '.join(fewer)}" if fewer else "")
        else:
            what, updates = "one policy on every graph", f"{args.updates * 2} updates"
        lines.append("")
        lines.append(f"Training ({what}, {updates}): median {statistics.median(secs):.0f} s per "
                     "policy.")
    return "\n".join(lines) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--taso-pb", help="TASO's graph_subst.pb (from TASO's repository)")
    p.add_argument("--out-dir", default="runs/xrlflow-table")
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    p.add_argument("--updates", type=int, default=60,
                   help="PPO updates per policy (NASRNN's: 30, the across-graph one's: twice this)")
    p.add_argument("--models", nargs="*",
                   help="a subset of the graphs (xrlflow-*, nasrnn; taso-bert comes with "
                   "xrlflow-bert)")
    p.add_argument("--no-across", dest="across", action="store_false",
                   help="train no policy on every graph at once (the (all) columns stay empty)")
    p.add_argument("--realistic", action="store_true",
                   help="the zoo's realistic transformers instead of X-RLflow's graphs")
    p.add_argument("--rewire", default=os.path.join(REPO, "build", "cli", "rewire"))
    args = p.parse_args()
    if not args.realistic and not args.taso_pb:
        p.error("--taso-pb is needed (TASO's graph_subst.pb; see docs/rules.md)")
    start = time.time()
    space = Space(args, args.realistic)
    baselines, learned, trainings = make_table(space, args)
    table = render(space, baselines, learned, trainings, args, args.realistic)
    table += f"\nThe whole table: {time.time() - start:.0f} s (cached runs not counted again).\n"
    with open(os.path.join(space.out, "table.md"), "w") as f:
        f.write(table)
    print(table)


if __name__ == "__main__":
    main()
