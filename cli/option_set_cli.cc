#include "cli/option_set_cli.h"

#include <CLI/CLI.hpp>
#include <type_traits>

namespace rewire::cli {
namespace {

/// CLI11's name for the type of an option's value, for --help.
std::string TypeName(const OptionSet::Option& o) {
  return std::visit(
      [](auto* p) -> std::string {
        using T = std::remove_pointer_t<decltype(p)>;
        if constexpr (std::is_same_v<T, std::string>) return "TEXT";
        if constexpr (std::is_floating_point_v<T>) return "FLOAT";
        return "INT";
      },
      o.target);
}

}  // namespace

void AddOptionSetFlags(CLI::App& cmd, const OptionSet& set, const std::string& group,
                       std::vector<std::pair<std::string, std::string>>& given) {
  CLI::Option_group* g = cmd.add_option_group(group);
  for (const OptionSet::Option& o : set.options()) {
    const std::string name = o.name;
    if (o.is_switch) {
      g->add_flag_callback(
          "--" + name, [&given, name] { given.emplace_back(name, ""); }, o.help);
      continue;
    }
    std::string help = o.help;
    if (!o.choices.empty()) {
      std::string list;
      for (const std::string& c : o.choices) list += (list.empty() ? "" : " | ") + c;
      help += " (" + list + ")";
    }
    const OptionSet::Option* option = &o;
    g->add_option_function<std::string>(
         "--" + name,
         [&given, name, option](const std::string& text) {
           // The value lands in the declaring instance too, which is only a template: the
           // search that runs is made afresh and set from `given`.
           const Status st = option->Assign(text);
           if (!st.ok()) throw CLI::ValidationError(st.message());
           given.emplace_back(name, text);
         },
         help)
        ->type_name(TypeName(o))
        ->default_str(o.ValueText());
  }
}

}  // namespace rewire::cli
