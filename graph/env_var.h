#pragma once
// Integer settings from environment variables (RANK, LOCAL_RANK, SLURM_PROCID, REWIRE_*): one
// parser, so every variable accepts and rejects the same spellings.

#include <cstdint>
#include <string>

#include "graph/status.h"

namespace rewire {

/// `value` (the text of variable `name`) as a decimal integer; `fallback` when `value` is null
/// or empty. Surrounding blanks are allowed. InvalidArgument, naming the variable and the text,
/// for anything else: "12x", "x", "1.5", a value outside int64_t.
StatusOr<int64_t> ParseIntVariable(const std::string& name, const char* value, int64_t fallback);

/// ParseIntVariable on the process environment: the integer in variable `name`, `fallback` when
/// it is unset or empty.
StatusOr<int64_t> IntFromEnv(const char* name, int64_t fallback);

}  // namespace rewire
