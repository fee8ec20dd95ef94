#pragma once
// Options a component declares for itself - a search's flags, say - as plain data: a name, a help
// text, where a value goes and which values it takes. Whoever holds the component reads the list
// and sets values: the CLI turns each option into a command-line flag (cli/option_set_cli.h), and
// code and tests set them by name from text (OptionSet::Set). The component keeps its options in
// its own struct; an OptionSet only points at them, so it must not outlive that struct.
//
//   OptionSet set;
//   set.Add("beam-width", &options.beam_width, "graphs kept at each depth").AtLeast(1);
//   set.Switch("no-greedy-seed", &options.greedy_seed, false, "start from the rollout only");
//   REWIRE_RETURN_IF_ERROR(set.Set("beam-width", "4"));

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "graph/status.h"

namespace rewire {

static_assert(std::is_same_v<size_t, uint64_t>, "OptionSet stores size_t options as uint64_t");

class OptionSet {
 public:
  /// Where an option's value goes (size_t is uint64_t on the platforms rewire builds on).
  using Target = std::variant<int*, int64_t*, uint64_t*, double*, std::string*, bool*>;

  struct Option {
    std::string name;  // without dashes: "beam-width" is the flag --beam-width
    std::string help;
    Target target;
    /// A switch takes no value: giving it stores `switch_value` in its bool.
    bool is_switch = false;
    bool switch_value = true;
    /// A text option's allowed values (empty: any).
    std::vector<std::string> choices;
    /// A number's bound: at least `min`, or above it when `min_exclusive`.
    std::optional<double> min;
    bool min_exclusive = false;

    /// Numbers: the value must be at least `bound`.
    Option& AtLeast(double bound);
    /// Numbers: the value must be above `bound`.
    Option& Above(double bound);
    /// Text: the value must be one of `values`.
    Option& OneOf(std::vector<std::string> values);

    /// The target's current value as text (what --help shows as the default).
    std::string ValueText() const;
    /// Checks `text` against the bound or choices and stores it. Errors (naming --name): text that
    /// is not a value of the target's type, a value out of bounds or not among the choices.
    Status Assign(const std::string& text) const;
  };

  /// Declares option `name` storing into `target` (a number or a text). The name must be new.
  template <typename T>
  Option& Add(const std::string& name, T* target, const std::string& help) {
    Option o;
    o.name = name;
    o.help = help;
    o.target = Target(target);
    return Push(std::move(o));
  }
  /// Declares a switch: given, it stores `value` into `target`.
  Option& Switch(const std::string& name, bool* target, bool value, const std::string& help);

  /// Every option, in the order declared (references stay valid as options are added).
  const std::deque<Option>& options() const { return options_; }
  const Option* Find(const std::string& name) const;

  /// Sets option `name` (with or without its leading dashes) from `text`; a switch takes "" or
  /// "true" (given) and "false" (not given). Errors: an unknown name (listing the known ones),
  /// and the option's own (Option::Assign).
  Status Set(const std::string& name, const std::string& text) const;
  /// Set for every pair, in order.
  Status SetAll(const std::vector<std::pair<std::string, std::string>>& values) const;

 private:
  Option& Push(Option option);
  std::deque<Option> options_;
};

}  // namespace rewire
