#pragma once
// Device profiles: the few figures of a machine that the analytic (roofline) cost model needs,
// loaded from TOML files in configs/devices/ (one per device, each figure with its source).
//
// File format (all keys at the top level; unknown keys are errors):
//   name                 = "h100"     # required; identifies the device in cost-cache keys
//   description          = "..."      # optional
//   kind                 = "gpu"      # optional: "gpu" or "cpu"
//   peak_fp32_tflops     = 67.0       # required, > 0: peak FP32 throughput, 1e12 FLOP/s
//   memory_bandwidth_gbs = 3350.0     # required, > 0: memory bandwidth, 1e9 bytes/s
//   launch_overhead_us   = 3.0        # required, >= 0: fixed cost per operator (kernel launch)

#include <string>

#include "graph/status.h"

namespace rewire {

struct DeviceProfile {
  std::string name;
  std::string description;
  std::string kind = "gpu";
  double peak_flops = 0;          // FP32 FLOP/s
  double memory_bandwidth = 0;    // bytes/s
  double launch_overhead_ms = 0;  // per operator
  std::string source;             // file it came from (or the name given to ParseDeviceProfile)
};

/// Parses a profile from TOML text; `source` names it in messages. Errors (InvalidArgument) say
/// "source:line:column: reason" for syntax errors, unknown keys and wrong types, and
/// "source: missing required key 'k'" for a missing field.
StatusOr<DeviceProfile> ParseDeviceProfile(const std::string& toml_text, const std::string& source);

/// Reads and parses a profile file. NotFound when the file cannot be read.
StatusOr<DeviceProfile> LoadDeviceProfile(const std::string& path);

/// A profile by name ("h100": `devices_dir`/h100.toml) or by path (anything with a '/' or ending
/// in ".toml"). NotFound for an unknown name lists the profiles present in `devices_dir`.
StatusOr<DeviceProfile> FindDeviceProfile(const std::string& name_or_path,
                                          const std::string& devices_dir);

}  // namespace rewire
