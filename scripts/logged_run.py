"""One helper of the scripts that make the docs' tables: a rewire command run with its output
appended to a log file."""

import json
import os
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def model_flags(graph):
    """`rewire optimize`'s model flags for a model spec: an ONNX path as it is, a zoo spec
    name:key=value,... as --model name --key value."""
    name, _, params = graph.partition(":")
    flags = ["--model", name]
    for item in filter(None, params.split(",")):
        key, _, value = item.partition("=")
        flags += ["--" + key.replace("_", "-"), value]
    return flags


def run(cmd, log):
    """Runs `cmd` in the repository, its command line and output appended to `log`; on failure
    exits naming the command and the log."""
    with open(log, "a") as f:
        f.write("$ " + " ".join(cmd) + "\n")
        f.flush()
        p = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=REPO)
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}; see {log}")


def verified_report(report, optimize_cmd, log, what):
    """The JSON report of a `rewire optimize` run (`optimize_cmd`, without --report), run into
    report.partial and renamed when the report does not exist yet, reused when it does; exits
    when the result did not verify."""
    if not os.path.exists(report):
        run([*optimize_cmd, "--report", report + ".partial"], log)
        os.replace(report + ".partial", report)
    with open(report) as f:
        r = json.load(f)
    if not r.get("verified"):
        sys.exit(f"{what}: the result does not verify")
    return r


def train_once(rewire, config, config_text, run_dir, log):
    """Trains `rewire train -q --config CONFIG` (CONFIG written from config_text) into run_dir
    unless an earlier call finished it (run_dir/trained.json); the seconds the training took."""
    done = os.path.join(run_dir, "trained.json")
    if not os.path.exists(done):
        with open(config, "w") as f:
            f.write(config_text)
        subprocess.run(["rm", "-rf", run_dir])
        start = time.time()
        run([rewire, "train", "-q", "--config", config], log)
        with open(done, "w") as f:
            json.dump({"seconds": time.time() - start}, f)
    with open(done) as f:
        return json.load(f)["seconds"]
