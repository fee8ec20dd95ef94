#pragma once
// Shared by the two halves of learner/config.h's implementation: config.cc (reading TOML and
// --set overrides, writing TOML) and config_validate.cc (what a valid config is). Not an API.

#include <map>
#include <string>

#include "graph/status.h"
#include "learner/config.h"

namespace rewire::config_internal {

/// Key path ("ppo.gamma", "env.models[1]") -> where its value came from: "FILE:LINE" or
/// "--set TEXT". Keys left at their defaults are absent.
using Locations = std::map<std::string, std::string>;

/// `where: message`, or just the message when nothing says where.
Status Error(const std::string& where, const std::string& message);

/// Shortest decimal text that reads back as exactly `value`, always recognisable as a float.
std::string FormatDouble(double value);

/// The first value of `config` out of its range or choices, as an error prefixed with where that
/// value came from (`at`; empty: no prefix).
Status Validate(const TrainConfig& config, const Locations& at);

}  // namespace rewire::config_internal
