// libFuzzer target for the TOML configs: the training config (learner/config.h) and device
// profiles (cost/device_profile.h). TOML text plus `--set` overrides must give a validated
// config or a Status with a message, never a crash, a hang or a sanitizer report. A training
// config that parses must also pass ValidateTrainConfig, and ToToml's text must parse back to
// the same settings (the run directory's config.toml promise); a device profile that parses must
// hold the finite, positive figures its header promises.
//
// Input: the TOML text, then each override after a NUL byte ("text\0run.seed=3\0env.models=x").
// A command line cannot hold a NUL, so every override is one a user could pass.
//
// Build and run: docs/fuzzing.md.

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cost/device_profile.h"
#include "learner/config.h"

namespace rewire {

// The names validation checks components against. The product reads them from the registries
// (learner/component_names.cc), which link LibTorch; this target is built without them, so it
// names the built-in components (a config naming another is an error here as it is there).
ComponentNames RegisteredComponentNames() {
  return ComponentNames{{"ppo-gnn"},
                        {"analytic", "cpu", "cuda", "ort", "e2e:ort", "e2e:reference", "e2e:cuda"},
                        {"greedy", "backtrack", "random", "eqsat", "mcts-eqsat", "rl", "guided"}};
}

}  // namespace rewire

namespace {

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "%s: %s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const size_t end = input.find('\0');
  const std::string text = input.substr(0, end);
  std::vector<std::string> overrides;
  for (size_t at = end; at != std::string::npos && overrides.size() < 16;) {
    const size_t next = input.find('\0', at + 1);
    overrides.push_back(input.substr(at + 1, next == std::string::npos ? next : next - at - 1));
    at = next;
  }

  if (auto device = rewire::ParseDeviceProfile(text, "fuzz-device.toml"); device.ok()) {
    if (!(std::isfinite(device->peak_flops) && device->peak_flops > 0 &&
          std::isfinite(device->memory_bandwidth) && device->memory_bandwidth > 0 &&
          std::isfinite(device->launch_overhead_ms) && device->launch_overhead_ms >= 0))
      Fail("a device profile with figures out of range parses", text);
  } else if (device.status().message().empty()) {
    Fail("device profile error without a message", "");
  }

  auto config = rewire::ParseTrainConfig(text, "fuzz.toml", overrides);
  if (!config.ok()) {
    if (config.status().message().empty()) Fail("error without a message", "");
    return 0;
  }
  if (auto valid = rewire::ValidateTrainConfig(*config); !valid.ok())
    Fail("parsed config fails ValidateTrainConfig", valid.message());
  const std::string written = rewire::ToToml(*config);
  auto again = rewire::ParseTrainConfig(written, "written.toml");
  if (!again.ok()) Fail("ToToml's text does not parse", again.status().message() + "\n" + written);
  if (const std::string rewritten = rewire::ToToml(*again); rewritten != written)
    Fail("ToToml's text reads back to other settings",
         written + "\n--- reads back as ---\n" + rewritten);
  return 0;
}
