// `rewire report --run DIR [--out DIR2]`: plots (PNG) and a markdown summary of a training run.
//
// Reads DIR/metrics.jsonl (one flat JSON object per PPO update, CleanRL metric names), and when
// present DIR/eval.json (`rewire eval`) and DIR/config.toml. Writes return.png, speedup.png,
// losses.png and summary.md into DIR2 (default DIR/report).

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/plot.h"
#include "graph/json.h"

namespace rewire::cli {
namespace {

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------------------------
// metrics.jsonl
// ---------------------------------------------------------------------------------------------

/// One PPO update: its update number and its numeric metrics (nulls and non-numbers left out).
struct Update {
  double update = 0;
  std::map<std::string, double> values;
};

StatusOr<std::string> ReadText(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return NotFound("cannot read " + path.string());
  std::stringstream ss;
  ss << f.rdbuf();
  if (f.bad()) return DataLoss("cannot read " + path.string());
  return ss.str();
}

/// Parses metrics.jsonl: one flat object per non-blank line; errors are "PATH:LINE: what".
StatusOr<std::vector<Update>> ReadMetrics(const fs::path& path) {
  REWIRE_ASSIGN_OR_RETURN(const std::string text, ReadText(path));
  std::vector<Update> updates;
  std::istringstream in(text);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    const std::string where = path.string() + ":" + std::to_string(number);
    StatusOr<Json> parsed = ParseJson(line);
    if (!parsed.ok()) return parsed.status().WithContext(where);
    const Json& obj = *parsed;
    if (!obj.is_object()) return InvalidArgument(where + ": expected a JSON object");
    Update u;
    u.update = updates.empty() ? 0 : updates.back().update + 1;  // when "update" is missing
    for (const auto& [key, value] : obj.items()) {
      if (value.is_number()) {
        if (key != "update") {
          u.values[key] = value.get<double>();
        } else if (std::isfinite(value.get<double>())) {
          u.update = value.get<double>();
        } else {
          return InvalidArgument(where + ": \"update\" is not a finite number");
        }
      } else if (value.is_string() || value.is_boolean()) {
        if (key == "update") return InvalidArgument(where + ": \"update\" is not a number");
        // labels and flags are not plotted
      } else if (value.is_structured()) {
        return InvalidArgument(where + ": value of \"" + key +
                               "\" is nested; expected a number, string, bool or null");
      }
    }
    updates.push_back(std::move(u));
  }
  if (updates.empty()) return InvalidArgument(path.string() + ": no updates recorded yet");
  return updates;
}

plot::Series MetricSeries(const std::vector<Update>& updates, const std::string& key,
                          const std::string& label) {
  plot::Series s{label, {}, {}};
  for (const Update& u : updates) {
    auto it = u.values.find(key);
    if (it == u.values.end() || !std::isfinite(it->second)) continue;
    s.x.push_back(u.update);
    s.y.push_back(it->second);
  }
  return s;
}

// ---------------------------------------------------------------------------------------------
// Summary
// ---------------------------------------------------------------------------------------------

enum class Better { kNone, kHigher, kLower };

struct MetricInfo {
  const char* key;
  Better better;
};

const MetricInfo kSummaryMetrics[] = {
    {"charts/episodic_return", Better::kHigher},
    {"charts/episodic_return_max", Better::kHigher},
    {"charts/episodic_length", Better::kNone},
    {"charts/speedup", Better::kHigher},
    {"charts/best_speedup", Better::kHigher},
    {"charts/SPS", Better::kHigher},
    {"charts/learning_rate", Better::kNone},
    {"losses/policy_loss", Better::kNone},
    {"losses/value_loss", Better::kLower},
    {"losses/entropy", Better::kNone},
    {"losses/approx_kl", Better::kNone},
    {"losses/clipfrac", Better::kNone},
    {"losses/explained_variance", Better::kHigher},
};

struct Stats {
  int points = 0;
  double first = 0, last = 0, min = 0, max = 0;
  double min_at = 0, max_at = 0;  // update numbers
};

Stats StatsOf(const plot::Series& s) {
  Stats st;
  for (size_t i = 0; i < s.y.size(); ++i) {
    const double v = s.y[i];
    if (st.points == 0) {
      st.first = st.min = st.max = v;
      st.min_at = st.max_at = s.x[i];
    }
    if (v < st.min) st.min = v, st.min_at = s.x[i];
    if (v > st.max) st.max = v, st.max_at = s.x[i];
    st.last = v;
    ++st.points;
  }
  return st;
}

std::string Num(double v) {
  if (!std::isfinite(v)) return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
  if (v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{:.0f}", v);
  return fmt::format("{:.4g}", v);
}

std::string Duration(double seconds) {
  if (seconds < 60) return fmt::format("{:.1f} s", seconds);
  const long long t = std::llround(seconds);
  if (t < 3600) return fmt::format("{}m {:02}s", t / 60, t % 60);
  return fmt::format("{}h {:02}m {:02}s", t / 3600, t % 3600 / 60, t % 60);
}

/// Text for a markdown table cell.
std::string Cell(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '\n' || c == '\r') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

/// `text` in a fenced code block whose fence is longer than any backtick run inside it.
std::string Fenced(const std::string& text, const std::string& lang) {
  size_t longest = 0, run = 0;
  for (char c : text) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  const std::string fence(std::max<size_t>(3, longest + 1), '`');
  std::string body = text;
  if (!body.empty() && body.back() != '\n') body += '\n';
  return fence + lang + "\n" + body + fence + "\n";
}

double LastValue(const std::vector<Update>& updates, const std::string& key, bool* found) {
  for (auto it = updates.rbegin(); it != updates.rend(); ++it) {
    auto v = it->values.find(key);
    if (v != it->values.end() && std::isfinite(v->second)) {
      *found = true;
      return v->second;
    }
  }
  *found = false;
  return 0;
}

// --- eval.json ---

/// "0.8000 (1.250x)": a cost in ms with the speedup over `initial` when both are known and
/// `note` after it; "-" without a cost.
std::string CostCell(std::optional<double> cost, std::optional<double> initial,
                     const std::string& note = "") {
  if (!cost || !std::isfinite(*cost)) return "-";
  const std::string buf = fmt::format("{:.4f}", *cost);
  std::vector<std::string> extras;
  if (initial && std::isfinite(*initial) && *cost > 0) {
    extras.push_back(fmt::format("{:.3f}x", *initial / *cost));
  }
  if (!note.empty()) extras.push_back(note);
  std::string cell = buf;
  for (size_t i = 0; i < extras.size(); ++i) cell += (i ? ", " : " (") + extras[i];
  return extras.empty() ? cell : cell + ")";
}

/// Every search's result measured end to end (eval.runtime) beside its prediction; empty when
/// nothing was measured.
std::string MeasuredSection(const Json& eval, const Json& results) {
  std::ostringstream md;
  for (const Json& r : results) {
    const Json* m = JsonMember(r, "measured");
    const Json* rows = m ? JsonMember(*m, "results") : nullptr;
    if (!rows || !rows->is_object() || rows->empty()) continue;
    const std::optional<std::string> model = JsonStringAt(r, "model");
    const std::optional<std::string> runtime = JsonStringAt(*m, "runtime");
    const std::optional<double> rounds = JsonNumberAt(*m, "rounds");
    const std::optional<double> threads = JsonNumberAt(eval, "runtime_threads");
    const std::optional<double> input = JsonNumberAt(*m, "input_ms");
    md << "\n"
       << (model ? Cell(*model) : "-") << ", measured end to end in "
       << (runtime ? Cell(*runtime) : "the runtime")
       << (threads ? " at " + Num(*threads) + " intra-op thread(s)" : "") << ", "
       << (rounds ? Num(*rounds) : "-") << " alternating rounds; the input's median "
       << (input ? fmt::format("{:.3f}", *input) : "-")
       << " ms. A speedup is the input's median over the result's in the same rounds; rounds "
          "faster counts the rounds whose median beat the input's.\n\n";
    // Other cost models' predictions (eval.also_cost), in the order of the first row's.
    std::vector<std::string> also;
    const Json* first_also = JsonMember(rows->begin().value(), "also_predicted_speedup");
    if (first_also && first_also->is_object()) {
      for (const auto& [name, v] : first_also->items()) also.push_back(name);
    }
    md << "| search | predicted |";
    for (const std::string& name : also) md << " predicted by " << Cell(name) << " |";
    md << " measured | ms | rounds faster | graph |\n|---|---:|";
    for (size_t i = 0; i < also.size(); ++i) md << "---:|";
    md << "---:|---:|---:|---|\n";
    for (const auto& [search, row] : rows->items()) {
      const auto x = [](std::optional<double> v) {
        return v ? fmt::format("{:.3f}x", *v) : std::string("-");
      };
      const Json* row_also = JsonMember(row, "also_predicted_speedup");
      const std::optional<double> ms = JsonNumberAt(row, "ms");
      const std::optional<double> faster = JsonNumberAt(row, "rounds_faster");
      md << "| " << Cell(search) << " | " << x(JsonNumberAt(row, "predicted_speedup")) << " | ";
      for (const std::string& name : also)
        md << x(row_also ? JsonNumberAt(*row_also, name) : std::nullopt) << " | ";
      md << x(JsonNumberAt(row, "speedup")) << " | " << (ms ? fmt::format("{:.3f}", *ms) : "-")
         << " | " << (faster ? Num(*faster) : "-") << (rounds ? "/" + Num(*rounds) : "") << " | ";
      const std::optional<std::string> same = JsonStringAt(row, "same_graph_as");
      md << (same ? "the graph of " + Cell(*same) : std::string("its own")) << " |\n";
    }
  }
  return md.str();
}

std::string EvalSection(const Json& eval) {
  std::ostringstream md;
  if (const std::optional<std::string> p = JsonStringAt(eval, "policy"))
    md << "Policy: `" << *p << "`\n\n";
  const Json* results = JsonMember(eval, "results");
  if (!results || !results->is_array() || results->empty()) {
    md << "No results.\n";
    return md.str();
  }
  std::vector<std::string> baselines;  // in order of first appearance
  for (const Json& r : *results) {
    const Json* b = JsonMember(r, "baselines");
    if (!b || !b->is_object()) continue;
    for (const auto& [name, v] : b->items()) {
      if (std::find(baselines.begin(), baselines.end(), name) == baselines.end())
        baselines.push_back(name);
    }
  }
  md << "Costs in ms; speedup over the initial graph in parentheses.\n\n";
  md << "| model | initial | policy: likeliest rewrite each step | policy: cheapest sampled "
        "rollout "
        "| guided search |";
  for (const std::string& b : baselines) md << " " << Cell(b) << " |";
  md << " RL time (s) | verified |\n|---|---:|---:|---:|---:|";
  for (size_t i = 0; i < baselines.size(); ++i) md << "---:|";
  md << "---:|---|\n";
  for (const Json& r : *results) {
    if (!r.is_object()) continue;
    const std::optional<std::string> model = JsonStringAt(r, "model");
    const std::optional<double> initial = JsonNumberAt(r, "initial_cost_ms");
    const std::optional<double> samples = JsonNumberAt(r, "samples");
    const std::string note = samples ? Num(*samples) + " samples" : "";
    md << "| " << (model ? Cell(*model) : "-") << " | " << CostCell(initial, std::nullopt) << " | "
       << CostCell(JsonNumberAt(r, "greedy_policy_cost_ms"), initial) << " | "
       << CostCell(JsonNumberAt(r, "sampled_best_cost_ms"), initial, note) << " |";
    const std::optional<double> expansions = JsonNumberAt(r, "guided_expansions");
    md << " "
       << CostCell(JsonNumberAt(r, "guided_cost_ms"), initial,
                   expansions ? Num(*expansions) + " graphs" : "")
       << " |";
    const Json* b = JsonMember(r, "baselines");
    for (const std::string& name : baselines) {
      md << " " << CostCell(b ? JsonNumberAt(*b, name) : std::nullopt, initial) << " |";
    }
    const std::optional<double> secs = JsonNumberAt(r, "rl_seconds");
    const std::optional<bool> verified = JsonBoolAt(r, "verified");
    md << " " << (secs ? Num(*secs) : "-") << " | "
       << (verified ? (*verified ? "yes" : "**NO**") : "-") << " |\n";
  }
  md << MeasuredSection(eval, *results);
  return md.str();
}

struct ReportOptions {
  std::string run;
  std::string out;
};

/// The Evaluation section from RUN/eval.json; empty when there is none. eval.json is optional: a
/// broken one is reported in the summary rather than failing it all.
std::string EvalMarkdown(const fs::path& run) {
  const fs::path eval_path = run / "eval.json";
  std::error_code ec;
  if (!fs::exists(eval_path, ec)) return "";
  const std::string text = Take(ReadText(eval_path));
  const StatusOr<Json> eval = ParseJsonObject(text);
  if (eval.ok()) return EvalSection(*eval);
  std::fprintf(stderr, "rewire: warning: %s: %s\n", eval_path.string().c_str(),
               eval.status().message().c_str());
  return "eval.json could not be read: " + eval.status().message() + "\n";
}

/// return.png, speedup.png and losses.png in `out`; appends the paths written to `written`.
void WritePlots(const std::vector<Update>& updates, const fs::path& out,
                std::vector<std::string>* written) {
  auto plot_file = [&](const std::string& name, const std::vector<plot::Chart>& charts,
                       plot::RenderOptions ro) {
    const std::string path = (out / name).string();
    Check(plot::WriteChartsPng(charts, ro, path));
    written->push_back(path);
  };
  const std::string x = "update";
  plot_file("return.png",
            {{"Episodic return",
              x,
              "return",
              {MetricSeries(updates, "charts/episodic_return", "charts/episodic_return"),
               MetricSeries(updates, "charts/episodic_return_max", "charts/episodic_return_max"),
               plot::TrailingMean(MetricSeries(updates, "charts/episodic_return", ""), 5,
                                  "mean of the last 5 updates")}}},
            {});
  plot_file("speedup.png",
            {{"Speedup over the input graph",
              x,
              "speedup (x)",
              {MetricSeries(updates, "charts/speedup", "charts/speedup"),
               MetricSeries(updates, "charts/best_speedup", "charts/best_speedup")}}},
            {});
  std::vector<plot::Chart> losses;
  for (const char* key :
       {"losses/policy_loss", "losses/value_loss", "losses/entropy", "losses/approx_kl"}) {
    losses.push_back({key, x, "", {MetricSeries(updates, key, "")}});
  }
  plot::RenderOptions grid;
  grid.width = 1200;
  grid.height = 800;
  grid.columns = 2;
  plot_file("losses.png", losses, grid);
}

/// The summary's header table: run, updates, steps, wall time, version, speedups.
void OverviewMarkdown(const std::vector<Update>& updates, const ReportOptions& o,
                      std::ostringstream& md) {
  std::error_code ec;
  fs::path name = fs::absolute(fs::path(o.run), ec).lexically_normal();
  if (name.filename().empty()) name = name.parent_path();  // "runs/x/"
  md << "# Training report: " << name.filename().string() << "\n\n";
  md << "| | |\n|---|---|\n";
  md << "| Run directory | `" << Cell(o.run) << "` |\n";
  md << "| Updates | " << updates.size() << " (update " << Num(updates.front().update) << " to "
     << Num(updates.back().update) << ") |\n";
  bool found = false;
  const double steps = LastValue(updates, "global_step", &found);
  if (found) md << "| Environment steps | " << Num(steps) << " |\n";
  const double wall = LastValue(updates, "wall_time", &found);
  md << "| Wall time | " << (found ? Duration(wall) : "-") << " |\n";
  const double version = LastValue(updates, "policy_version", &found);
  if (found) md << "| Policy version | " << Num(version) << " |\n";
  const Stats speed = StatsOf(MetricSeries(updates, "charts/speedup", ""));
  const Stats best_speed = StatsOf(MetricSeries(updates, "charts/best_speedup", ""));
  if (speed.points > 0) {
    md << "| Final speedup | " << fmt::format("{:.3f}x", speed.last) << " |\n";
  } else {
    md << "| Final speedup | - |\n";
  }
  const Stats& best = best_speed.points > 0 ? best_speed : speed;
  if (best.points > 0) {
    md << "| Best speedup | " << fmt::format("{:.3f}x", best.max) << " (update " << Num(best.max_at)
       << ") |\n";
  }
}

/// The Metrics section: first, last, min, max and best of each summary metric.
void MetricsMarkdown(const std::vector<Update>& updates, std::ostringstream& md) {
  md << "\n## Metrics\n\n";
  md << "Best is the highest value for returns, speedups, SPS and explained variance, the lowest "
        "for the value loss.\n\n";
  md << "| metric | points | first | last | min | max | best (update) |\n";
  md << "|---|---:|---:|---:|---:|---:|---:|\n";
  int rows = 0;
  for (const MetricInfo& m : kSummaryMetrics) {
    const Stats st = StatsOf(MetricSeries(updates, m.key, ""));
    if (st.points == 0) continue;
    std::string best_cell = "-";
    if (m.better == Better::kHigher) best_cell = Num(st.max) + " (" + Num(st.max_at) + ")";
    if (m.better == Better::kLower) best_cell = Num(st.min) + " (" + Num(st.min_at) + ")";
    md << "| " << m.key << " | " << st.points << " | " << Num(st.first) << " | " << Num(st.last)
       << " | " << Num(st.min) << " | " << Num(st.max) << " | " << best_cell << " |\n";
    ++rows;
  }
  if (rows == 0) md << "| (no metric values recorded) | | | | | | |\n";
}

void RunReport(const ReportOptions& o) {
  const fs::path run(o.run);
  std::error_code ec;
  if (!fs::exists(run, ec)) throw CommandError("run directory " + o.run + " does not exist");
  if (!fs::is_directory(run, ec)) throw CommandError(o.run + " is not a directory");
  const fs::path metrics_path = run / "metrics.jsonl";
  if (!fs::exists(metrics_path, ec)) {
    throw CommandError(metrics_path.string() + " not found: is " + o.run +
                       " a training run directory?");
  }
  const std::vector<Update> updates = Take(ReadMetrics(metrics_path));
  const std::string eval_md = EvalMarkdown(run);

  const fs::path out = o.out.empty() ? run / "report" : fs::path(o.out);
  fs::create_directories(out, ec);
  if (ec) throw CommandError("cannot create " + out.string() + ": " + ec.message());
  std::vector<std::string> written;
  WritePlots(updates, out, &written);

  std::ostringstream md;
  OverviewMarkdown(updates, o, md);
  MetricsMarkdown(updates, md);
  md << "\n## Plots\n\n";
  md << "![return](return.png)\n\n![speedup](speedup.png)\n\n![losses](losses.png)\n";
  if (!eval_md.empty()) md << "\n## Evaluation\n\n" << eval_md;
  const fs::path config_path = run / "config.toml";
  if (fs::exists(config_path, ec)) {
    md << "\n## Config\n\n" << Fenced(Take(ReadText(config_path)), "toml");
  }

  const std::string summary = (out / "summary.md").string();
  {
    std::ofstream f(summary, std::ios::binary | std::ios::trunc);
    f << md.str();
    if (!f.flush()) throw CommandError("cannot write " + summary);
  }
  written.push_back(summary);
  for (const std::string& p : written) std::printf("wrote %s\n", p.c_str());
}

}  // namespace

void RegisterReport(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "report", "Plot a training run's metrics (PNG) and summarise it in markdown");
  auto o = std::make_shared<ReportOptions>();
  cmd->add_option("--run", o->run, "Run directory (with metrics.jsonl)")->required();
  cmd->add_option("--out", o->out, "Output directory (default: RUN/report)");
  cmd->callback([o]() { RunReport(*o); });
}

}  // namespace rewire::cli
