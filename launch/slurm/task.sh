#!/usr/bin/env bash
# One task of launch/slurm/rewire.sbatch: this node's supervisor. Maps Slurm's variables onto
# `rewire launch`: SLURM_PROCID -> --node, SLURM_NTASKS -> --nodes, the first host of
# SLURM_JOB_NODELIST -> the rendezvous address (rewire parses the node list itself).
#
# Environment: REWIRE_CONFIG (required), REWIRE_ARGS (more launch options, e.g. "--resume"),
# REWIRE (the binary; default build/cli/rewire, then rewire on PATH), MASTER_PORT (required
# for more than one task), REWIRE_BIND (this node's address for the learners' sockets; default
# the address of this host's name, as other nodes resolve it).
set -euo pipefail
: "${SLURM_PROCID:?not inside a Slurm job step (SLURM_PROCID unset)}"
: "${SLURM_NTASKS:?SLURM_NTASKS unset}"
: "${REWIRE_CONFIG:?REWIRE_CONFIG unset}"
if [ -z "${REWIRE:-}" ]; then
  root=$(cd "$(dirname "$0")/../.." && pwd)
  if [ -x "$root/build/cli/rewire" ]; then REWIRE="$root/build/cli/rewire"; else REWIRE=rewire; fi
fi
set_bind=()
if [ "$SLURM_NTASKS" -gt 1 ]; then
  # Other nodes must reach this node's learners: bind the address they know it by.
  bind=${REWIRE_BIND:-}
  if [ -z "$bind" ] && [ "$(hostname)" != localhost ]; then
    bind=$(getent hosts "$(hostname)" | awk '{print $1; exit}')
  fi
  if [ -n "$bind" ]; then set_bind=(--set "distributed.bind=\"$bind\""); fi
fi
# shellcheck disable=SC2086  # REWIRE_ARGS is a list of options
exec "$REWIRE" launch --config "$REWIRE_CONFIG" --node "$SLURM_PROCID" --nodes "$SLURM_NTASKS" \
  "${set_bind[@]}" ${REWIRE_ARGS:-}
