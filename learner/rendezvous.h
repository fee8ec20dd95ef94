#pragma once
// Where a data-parallel learner rank stands in its group (learner/data_parallel.h), read from the
// environment the way torchrun and Slurm set it. No LibTorch here: the launcher includes it.

#include <map>
#include <string>

#include "graph/status.h"

namespace rewire {

// ---------------------------------------------------------------------------- rendezvous

/// Where this process stands in the group and where the master's store listens.
struct Rendezvous {
  int rank = 0;                           // 0 .. world_size-1; rank 0 hosts the store
  int world_size = 1;                     // 1: single process, no store, no process group
  std::string master_addr = "127.0.0.1";  // host of rank 0
  int master_port = 0;                    // 0: rank 0 picks a free port (see port())
};

/// Reads RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT; each falls back to Slurm's
/// SLURM_PROCID, SLURM_NTASKS and the first host of SLURM_JOB_NODELIST (or SLURM_NODELIST).
/// With none of RANK/WORLD_SIZE/SLURM_PROCID/SLURM_NTASKS set: a single process {0, 1}.
/// Empty variables count as unset. Errors (InvalidArgument) name the variable and its value:
/// "WORLD_SIZE must be a positive integer, got 'x'", a rank out of range, a set rank without a
/// world size (or the reverse), a missing MASTER_PORT when the world size is above 1.
StatusOr<Rendezvous> RendezvousFromEnv();

/// RendezvousFromEnv on a given set of variables instead of the process environment.
StatusOr<Rendezvous> RendezvousFromVars(const std::map<std::string, std::string>& vars);

/// The first host of a Slurm node list: "node[01-04,07]" -> "node01", "a,b" -> "a",
/// "host" -> "host", "r[1-2]-n[08-09],x" -> "r1-n08". InvalidArgument when empty or malformed.
StatusOr<std::string> FirstHostOfNodelist(const std::string& nodelist);

}  // namespace rewire
