"""One helper of the scripts that make the docs' tables: a rewire command run with its output
appended to a log file."""

import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cmd, log):
    """Runs `cmd` in the repository, its command line and output appended to `log`; on failure
    exits naming the command and the log."""
    with open(log, "a") as f:
        f.write("$ " + " ".join(cmd) + "\n")
        f.flush()
        p = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=REPO)
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}; see {log}")
