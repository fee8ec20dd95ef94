#!/usr/bin/python3
"""Chaos run of `rewire launch` on loopback (docs/cluster.md, "Chaos run").

    /usr/bin/python3 scripts/chaos.py [--every 20] [--max-kills 8] [--timeout 1200] [--roles env]

Starts `rewire launch` with a config (default configs/distributed-local.toml) in a fresh run
directory, and every N seconds SIGKILLs one running env actor or learner rank chosen at random
(their pids are in RUN_DIR/processes.json), until --max-kills kills or the run's end. Meanwhile it
polls every process's status file (actors/env<a>.json, learners/rank<r>.json), keeping the last
one each incarnation (pid) wrote, and reads each one again just before killing it. Then it checks:

1. the run finishes (`launch: done at policy version V`, V = run.max_updates) within --timeout;
2. every learner group that lost a rank resumed from the last checkpoint: its train.log says
   "resuming ... at update U" with U at least the policy version of the last metrics line before
   the kill (rank 0 writes the checkpoint before that line);
3. no accepted episode is lost and none is learned from twice. With receipts
   (distributed.receipts, the default) the check is per rollout: every rollout a learner
   incarnation accepted (learners/rank<r>.episodes.jsonl, the journal) must be in the final
   ledgers (checkpoints/episodes.rank<r>.jsonl: what the updates of the final policy's lineage
   learned from), dropped for a counted reason (stale, future, replay), or still in its actor's
   outbox (actors/env<a>.outbox/: sent again by a resumed run); no rollout may appear twice in
   the final ledgers. Without receipts an actor's "sent" means queued on a PUSH socket, and the
   check counts per learner incarnation: each accepted episode must be learned from in an update
   the final policy descends from, dropped for a counted reason, or left over at the end.
   --roles may also name `runtime`: the measuring runtimes of env actors (their child processes:
   ONNX Runtime's runner, an isolated measurement), killed in the middle of a measurement; the
   run must finish all the same.

Prints the kills, the restarts seen, the final policy version and the episode accounting, and
keeps what it saw (kills, every incarnation's last status) in RUN_DIR/chaos.json.
Exit status: 0 all three hold; 1 the run did not finish or did not resume correctly (or the
accounting does not balance); 2 it finished and resumed, but acknowledged episodes were lost.
"""
import argparse
import glob
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time

SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def last_metrics_version(run_dir):
    try:
        with open(os.path.join(run_dir, "metrics.jsonl")) as f:
            lines = [line for line in f if line.strip()]
        return int(json.loads(lines[-1])["policy_version"]) if lines else 0
    except (OSError, ValueError, KeyError):
        return 0


class Watch:
    """The last status each process incarnation (pid) wrote."""

    def __init__(self, run_dir):
        self.run_dir = run_dir
        self.learners = {}  # (rank, pid) -> learners/rank<r>.json
        self.actors = {}  # (actor, pid) -> actors/env<a>.json
        self.pids = {}  # (role, rank) -> pids seen, in order

    def poll(self):
        for path in glob.glob(os.path.join(self.run_dir, "learners", "rank*.json")):
            s = read_json(path)
            if s and "pid" in s:
                self.learners[(s["rank"], s["pid"])] = s
        for path in glob.glob(os.path.join(self.run_dir, "actors", "env*[0-9].json")):
            s = read_json(path)
            if s and "pid" in s:
                self.actors[(s["actor"], s["pid"])] = s
        for p in self.processes():
            if p.get("pid", 0) > 0:
                seen = self.pids.setdefault((p["role"], p["rank"]), [])
                if not seen or seen[-1] != p["pid"]:
                    seen.append(p["pid"])

    def processes(self):
        table = read_json(os.path.join(self.run_dir, "processes.json"))
        return table if isinstance(table, list) else []


def resume_versions(run_dir):
    """Per learner rank, the versions its incarnations resumed at, from the train logs."""
    out = {}
    for path in glob.glob(os.path.join(run_dir, "train*.log")):
        m = re.search(r"train\.rank(\d+)\.log$", path)
        rank = int(m.group(1)) if m else 0
        with open(path, errors="replace") as f:
            out[rank] = [int(v) for v in re.findall(r"resuming .* at update (\d+)", f.read())]
    return out


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rewire", default=os.path.join(SOURCE_DIR, "build", "cli", "rewire"))
    p.add_argument("--config", default=os.path.join(SOURCE_DIR, "configs", "distributed-local.toml"))
    p.add_argument("--run-dir", default=os.path.join(SOURCE_DIR, "runs", "chaos"))
    p.add_argument("--every", type=float, default=20, help="seconds between kills")
    p.add_argument("--first", type=float, default=None, help="seconds before the first kill")
    p.add_argument("--max-kills", type=int, default=8)
    p.add_argument("--timeout", type=float, default=1200, help="bound on the whole run (seconds)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--roles", default="env,learner",
                   help="which processes may be killed: env, learner, runtime (an env actor's "
                        "measuring child process), comma-separated")
    p.add_argument("--set", action="append", default=[], help="config override, as for launch")
    return p.parse_args()


def runtime_children(watch):
    """Child processes of running env actors (ONNX Runtime's runner, an isolated measurement),
    as victims of role "runtime"."""
    actors = {p["pid"]: p["rank"] for p in watch.processes()
              if p.get("role") == "env" and p.get("state") == "running" and p.get("pid", 0) > 0}
    out = []
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            with open(stat) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ppid = int(fields[1])
        if ppid in actors:
            out.append({"role": "runtime", "rank": actors[ppid],
                        "pid": int(stat.split("/")[2]), "state": "running"})
    return out


def kill_one(args, rng, watch, kills, started):
    roles = args.roles.split(",")
    running = [p for p in watch.processes()
               if p.get("state") == "running" and p.get("pid", 0) > 0
               and p.get("role") in roles]
    if "runtime" in roles:
        running += runtime_children(watch)
    if not running:
        return
    # A role first, then one of its processes: learners are as likely victims as env actors,
    # however many more actors there are.
    role = rng.choice(sorted({p["role"] for p in running}))
    victim = rng.choice([p for p in running if p["role"] == role])
    watch.poll()  # the victim's status as close to its death as possible
    checkpointed = last_metrics_version(args.run_dir)
    has_checkpoint = os.path.exists(os.path.join(args.run_dir, "checkpoints", "latest.pt"))
    try:
        os.kill(victim["pid"], signal.SIGKILL)
    except ProcessLookupError:
        return
    kills.append({"t": round(time.time() - started, 1), "role": victim["role"],
                  "rank": victim["rank"], "pid": victim["pid"], "checkpointed": checkpointed,
                  "has_checkpoint": has_checkpoint})
    print(f"chaos: t={kills[-1]['t']:.0f}s killed {victim['role']} {victim['rank']} "
          f"(pid {victim['pid']}); last metrics line: version {checkpointed}", flush=True)


def run_launch(args):
    if os.path.exists(args.run_dir):
        shutil.rmtree(args.run_dir)
    os.makedirs(args.run_dir)
    cmd = [args.rewire, "launch", "--config", args.config, "--set", f"run.dir={args.run_dir}"]
    for s in args.set:
        cmd += ["--set", s]
    log = open(os.path.join(args.run_dir, "chaos-launch.log"), "w")
    launch = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    rng = random.Random(args.seed)
    watch, kills = Watch(args.run_dir), []
    started = time.time()
    next_kill = started + (args.first if args.first is not None else args.every)
    timed_out = False
    while launch.poll() is None:
        watch.poll()
        now = time.time()
        if now - started > args.timeout:
            timed_out = True
            launch.send_signal(signal.SIGTERM)
            try:
                launch.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(launch.pid, signal.SIGKILL)
            break
        if len(kills) < args.max_kills and now >= next_kill:
            if not os.path.exists(os.path.join(args.run_dir, "done")):
                kill_one(args, rng, watch, kills, started)
            next_kill = now + args.every
        time.sleep(0.2)
    watch.poll()
    log.close()
    with open(os.path.join(args.run_dir, "chaos.json"), "w") as f:  # what was seen, for the record
        json.dump({"kills": kills,
                   "learners": [dict(s, key=[r, p]) for (r, p), s in watch.learners.items()],
                   "actors": [dict(s, key=[a, p]) for (a, p), s in watch.actors.items()],
                   "pids": [[role, rank, pids] for (role, rank), pids in watch.pids.items()]},
                  f, indent=1)
    with open(os.path.join(args.run_dir, "chaos-launch.log"), errors="replace") as f:
        output = f.read()
    return launch.returncode, output, watch, kills, time.time() - started, timed_out


def config_value(run_dir, section, key):
    with open(os.path.join(run_dir, "launch.toml")) as f:
        current = None
        for line in f:
            line = line.strip()
            if line.startswith("["):
                current = line.strip("[]")
            elif current == section and line.split("=")[0].strip() == key:
                return line.split("=", 1)[1].strip()
    raise SystemExit(f"chaos: {section}.{key} not in launch.toml")


def incarnation_starts(kills, resumed):
    """The policy version each incarnation of the learner group started from: 0, then per
    learner kill the version the group resumed at (0 when no checkpoint was on disk yet)."""
    starts, lines = [0], list(resumed)
    for k in (k for k in kills if k["role"] == "learner"):
        starts.append(lines.pop(0) if k["has_checkpoint"] and lines else 0)
    return starts


def account(watch, kills, run_dir, final_version, epu):
    """Episode accounting over every incarnation (see the module's docstring). Each update of
    a rank learns from `epu` of its episodes; an incarnation's updates from its start version to
    the version the next one resumed at (or to the end) are in the final policy's lineage."""
    sent = sum(s.get("episodes_sent", 0) for s in watch.actors.values())
    unsent = sum(s.get("episodes_unsent", 0) for s in watch.actors.values())
    resumes = resume_versions(run_dir)
    t = dict(sent=sent, unsent=unsent, accepted=0, used=0, dropped=0, lost_unlearned=0,
             lost_learned=0, left_over=0, in_final_policy=0, unaligned=0, final_mismatch=0)
    for rank in sorted({r for r, _ in watch.learners}):
        order = watch.pids.get(("learner", rank), [])
        pids = sorted((pid for (r, pid) in watch.learners if r == rank),
                      key=lambda p: order.index(p) if p in order else len(order))
        starts = incarnation_starts(kills, resumes.get(rank, []))
        if len(starts) != len(pids):
            t["unaligned"] += 1
            starts = [0] + resumes.get(rank, [])
        for i, pid in enumerate(pids):
            s = watch.learners[(rank, pid)]
            accepted = s.get("rollouts", {}).get("accepted", 0)
            used = s.get("episodes_used", 0)
            dropped = s.get("dropped_stale", 0) + s.get("dropped_future", 0) + \
                s.get("dropped_replay", 0)
            t["accepted"] += accepted
            t["used"] += used
            t["dropped"] += dropped
            start = starts[i] if i < len(starts) else 0
            last = i + 1 == len(pids)
            end = final_version if last else (starts[i + 1] if i + 1 < len(starts) else start)
            kept = max(0, end - start) * epu
            t["in_final_policy"] += kept
            if last:
                t["left_over"] += accepted - used - dropped
                t["final_mismatch"] += abs(used - kept)  # it ended cleanly: exact
            else:  # died, or was stopped with its group, and came back from a checkpoint
                t["lost_unlearned"] += accepted - used - dropped
                t["lost_learned"] += used - kept  # updates in flight or after the checkpoint
    t["never_accepted"] = sent - t["accepted"]
    return t


def read_lines(path):
    try:
        with open(path, errors="replace") as f:
            return f.read().splitlines()
    except OSError:
        return []


def account_receipts(watch, run_dir):
    """Per-rollout accounting with receipts (see the module's docstring, check 3)."""
    accepted, dropped, duplicates = set(), set(), 0
    for path in glob.glob(os.path.join(run_dir, "learners", "rank*.episodes.jsonl")):
        for line in read_lines(path):
            try:
                e = json.loads(line)
            except ValueError:
                continue  # a line cut by a kill
            if e.get("event") == "accepted":
                accepted.add(e["id"])
            elif e.get("event") == "duplicate":
                duplicates += 1
            elif e.get("event") in ("stale", "future", "replay"):
                dropped.add(e["id"])
    lineage = []
    for path in glob.glob(os.path.join(run_dir, "checkpoints", "episodes.rank*.jsonl")):
        for line in read_lines(path):
            try:
                lineage += json.loads(line)["episodes"]
            except (ValueError, KeyError):
                pass
    outbox = set()
    for d in glob.glob(os.path.join(run_dir, "actors", "env*.outbox")):
        actor = "env-" + re.search(r"env(\d+)\.outbox$", d).group(1)
        for name in os.listdir(d):
            m = re.fullmatch(r"(\d+)-(\d+)", name)
            if m:
                outbox.add(f"{actor}:{m.group(1)}:{m.group(2)}")
    learned = set(lineage)
    statuses = watch.actors.values()
    t = dict(
        sent=sum(s.get("episodes_sent", 0) for s in statuses),
        resent=sum(s.get("episodes_resent", 0) for s in statuses),
        receipted=sum(s.get("receipted_learned", 0) + s.get("receipted_dropped", 0)
                      for s in statuses),
        accepted=len(accepted), learned=len(learned), twice=len(lineage) - len(learned),
        duplicates=duplicates, dropped=len(dropped - learned),
        left_over=len((accepted & outbox) - learned - dropped),
        lost=len(accepted - learned - dropped - outbox),
        learned_unaccepted=len(learned - accepted))
    t["lost_ids"] = sorted(accepted - learned - dropped - outbox)[:10]
    return t


def main():
    args = parse_args()
    code, output, watch, kills, wall, timed_out = run_launch(args)
    done = re.search(r"launch: done at policy version (\d+) \(run.max_updates (\d+)\)", output)
    summary = next((line for line in output.splitlines() if line.startswith("launch: ")
                    and "policy version" in line), "")
    print(f"chaos: launch exited {code} after {wall:.0f} s{' (timed out)' if timed_out else ''}")
    print(f"chaos: {summary}")
    ok = bool(done) and code == 0 and done.group(1) == done.group(2)
    final_version = int(done.group(1)) if done else last_metrics_version(args.run_dir)

    restarts = {f"{role} {rank}": len(pids) - 1 for (role, rank), pids in sorted(watch.pids.items())
                if len(pids) > 1}
    print(f"chaos: kills {len(kills)} (learner {sum(k['role'] == 'learner' for k in kills)}, "
          f"env {sum(k['role'] == 'env' for k in kills)}); restarts seen (new pids): "
          + (", ".join(f"{k} x{v}" for k, v in restarts.items()) or "none"))

    # Each learner kill restarts the group once; with a checkpoint on disk the restarted rank 0
    # says "resuming ... at update U", and U is the checkpoint: the last metrics line's version,
    # or one more when the kill fell between writing the checkpoint and the metrics line.
    resumed = resume_versions(args.run_dir).get(0, [])
    expected = [k for k in kills if k["role"] == "learner" and k["has_checkpoint"]]
    if len(resumed) != len(expected):
        print(f"chaos: {len(expected)} learner kills with a checkpoint on disk, but rank 0 "
              f"resumed {len(resumed)} times: {resumed}")
        ok = False
    for k, u in zip(expected, resumed):
        good = k["checkpointed"] <= u <= k["checkpointed"] + 1
        print(f"chaos: learner {k['rank']} killed at t={k['t']:.0f}s, last metrics line version "
              f"{k['checkpointed']}; the group resumed at update {u}: "
              f"{'ok' if good else 'NOT THE LAST CHECKPOINT'}")
        ok = ok and good

    if glob.glob(os.path.join(args.run_dir, "learners", "rank*.episodes.jsonl")):
        r = account_receipts(watch, args.run_dir)
        print("chaos: rollouts (receipts): sent {sent}, re-sent {resent}, receipted to actors "
              "{receipted}; accepted by learners {accepted}; learned from in the final policy's "
              "lineage {learned}, learned from twice {twice}; duplicates dropped {duplicates}; "
              "dropped (stale, future, replay) {dropped}; left over in actors' outboxes "
              "{left_over}; lost {lost}".format(**r))
        if r["learned_unaccepted"]:
            print(f"chaos: {r['learned_unaccepted']} rollouts in the final ledgers were never "
                  "journalled as accepted")
            ok = False
        if not ok:
            print("chaos: FAILED: the run did not finish, did not resume from its checkpoint, or "
                  "its rollouts do not add up")
            return 1
        if r["lost"] or r["twice"]:
            print(f"chaos: {r['lost']} accepted rollouts lost (e.g. {r['lost_ids']}), "
                  f"{r['twice']} learned from twice")
            return 2
        print("chaos: passed: finished, resumed from checkpoints, no accepted rollout lost, none "
              "learned from twice")
        return 0

    epu = int(config_value(args.run_dir, "ppo", "episodes_per_update"))
    t = account(watch, kills, args.run_dir, final_version, epu)
    print("chaos: episodes: sent {sent} (and {unsent} given up unsent); accepted by learners "
          "{accepted}, never accepted {never_accepted}; learned from {used}, of which in the "
          "final policy {in_final_policy} and lost with a learner {lost_learned} (an update in "
          "flight or after the last checkpoint); dropped (stale, future, replay) {dropped}; "
          "accepted and lost with a learner before an update took them {lost_unlearned}; "
          "accepted and left over at the end {left_over}".format(**t))
    if t["unaligned"] or t["final_mismatch"] or t["lost_learned"] < 0:
        print(f"chaos: the accounting does not balance (incarnations not matched to resumes: "
              f"{t['unaligned']}, the last incarnations' episodes against their updates: "
              f"{t['final_mismatch']}, episodes learned by dead incarnations beyond their "
              f"updates: {t['lost_learned']}); a status file is written once a second, so a "
              "killed rank's last second can be missing")
        ok = False
    lost = t["lost_unlearned"] + t["lost_learned"]
    if not ok:
        print("chaos: FAILED: the run did not finish, did not resume from its checkpoint, or its "
              "episodes do not add up")
        return 1
    if lost > 0:
        print(f"chaos: finished and resumed, but {lost} of {t['accepted']} acknowledged "
              f"episodes were lost with learners that died ({t['lost_unlearned']} not yet in an "
              f"update, {t['lost_learned']} in an update that no checkpoint kept)")
        return 2
    print("chaos: passed: finished, resumed from checkpoints, no acknowledged episode lost")
    return 0


if __name__ == "__main__":
    sys.exit(main())
