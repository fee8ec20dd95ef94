// `rewire plot --series FILE.json --out FILE.png`: line charts of any series (curves a script
// computed, a table's data) drawn by the renderer of `rewire report` (cli/plot.h), so scripts make
// PNGs without a plotting library.
//
// The series file is one JSON object:
//   {"title": "optional, over the whole image",
//    "panels": [{"title": "...", "x_label": "...", "y_label": "...",
//                "series": [{"label": "...", "x": [1, 2, 3], "y": [1.0, 1.2, null]}]}]}
// Every key but "panels", a panel's "series" and a series' "y" is optional; a series without "x"
// is drawn at x = 0, 1, 2, ...; null is a gap in the line. Unknown keys are errors (a misspelt
// "x_label" would otherwise vanish silently), and every error names the field to fix.

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/plot.h"
#include "graph/json.h"

namespace rewire::cli {
namespace {

namespace fs = std::filesystem;

struct PlotOptions {
  std::string series;
  std::string out;
  int columns = 0;
  int width = 0;
  int height = 0;
};

/// The JSON type of `v` in words, for messages.
std::string TypeName(const Json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "an array";
  return "an object";
}

/// Parses a series file's JSON; every error is "FILE: WHERE: what to fix".
class SeriesReader {
 public:
  explicit SeriesReader(std::string file) : file_(std::move(file)) {}

  std::pair<std::string, std::vector<plot::Chart>> Read(const Json& root) {
    CheckKeys(root, "the top level", {"title", "panels"});
    const std::string title = OptionalString(root, "title", "");
    const Json* panels = JsonMember(root, "panels");
    if (!panels) {
      Fail("\"panels\"",
           "is missing; expected {\"panels\": [{\"title\": ..., \"series\": "
           "[{\"label\": ..., \"x\": [...], \"y\": [...]}]}]}");
    }
    if (!panels->is_array()) {
      Fail("\"panels\"", "is " + TypeName(*panels) + "; expected an array of panels");
    }
    if (panels->empty()) Fail("\"panels\"", "is empty; give at least one panel to draw");
    std::vector<plot::Chart> charts;
    for (size_t i = 0; i < panels->size(); ++i) {
      charts.push_back(ReadPanel((*panels)[i], fmt::format("panels[{}]", i)));
    }
    return {title, charts};
  }

 private:
  /// Throws "FILE: WHERE WHAT", WHERE being the field's path (panels[0].series[1].x).
  [[noreturn]] void Fail(const std::string& where, const std::string& what) const {
    throw CommandError(file_ + ": " + where + " " + what);
  }

  void CheckKeys(const Json& obj, const std::string& where,
                 const std::vector<std::string>& allowed) const {
    if (!obj.is_object()) Fail(where, "is " + TypeName(obj) + "; expected an object");
    for (const auto& [key, value] : obj.items()) {
      bool known = false;
      for (const std::string& a : allowed) known = known || a == key;
      if (known) continue;
      std::string list;
      for (const std::string& a : allowed) list += (list.empty() ? "" : ", ") + ("\"" + a + "\"");
      Fail(where, "has an unknown key \"" + key + "\"; the keys are " + list);
    }
  }

  /// The string member `key` of `obj` ("" when absent); `where` is the object's path, empty
  /// at the top level.
  std::string OptionalString(const Json& obj, const std::string& key,
                             const std::string& where) const {
    const Json* v = JsonMember(obj, key);
    if (!v || v->is_null()) return "";
    if (!v->is_string()) {
      Fail(where.empty() ? "\"" + key + "\"" : where + "." + key,
           "is " + TypeName(*v) + "; expected a string");
    }
    return v->get<std::string>();
  }

  /// The numbers of `arr` (null: NaN, a gap in the line).
  std::vector<double> Numbers(const Json& arr, const std::string& where) const {
    if (!arr.is_array()) Fail(where, "is " + TypeName(arr) + "; expected an array of numbers");
    std::vector<double> out;
    out.reserve(arr.size());
    for (size_t i = 0; i < arr.size(); ++i) {
      const Json& v = arr[i];
      if (v.is_null()) {
        out.push_back(std::numeric_limits<double>::quiet_NaN());
      } else if (v.is_number()) {
        out.push_back(v.get<double>());
      } else {
        Fail(fmt::format("{}[{}]", where, i),
             "is " + TypeName(v) + "; expected a number (or null for a gap)");
      }
    }
    return out;
  }

  plot::Chart ReadPanel(const Json& p, const std::string& where) const {
    CheckKeys(p, where, {"title", "x_label", "y_label", "series"});
    plot::Chart chart;
    chart.title = OptionalString(p, "title", where);
    chart.x_label = OptionalString(p, "x_label", where);
    chart.y_label = OptionalString(p, "y_label", where);
    const Json* series = JsonMember(p, "series");
    if (!series) Fail(where, "has no \"series\"; expected \"series\": [{\"y\": [...]}, ...]");
    if (!series->is_array()) {
      Fail(where + ".series", "is " + TypeName(*series) + "; expected an array of series");
    }
    for (size_t i = 0; i < series->size(); ++i) {
      chart.series.push_back(ReadSeries((*series)[i], fmt::format("{}.series[{}]", where, i)));
    }
    return chart;
  }

  plot::Series ReadSeries(const Json& s, const std::string& where) const {
    CheckKeys(s, where, {"label", "x", "y"});
    plot::Series out;
    out.label = OptionalString(s, "label", where);
    const Json* y = JsonMember(s, "y");
    if (!y) Fail(where, "has no \"y\"; expected \"y\": [numbers]");
    out.y = Numbers(*y, where + ".y");
    if (const Json* x = JsonMember(s, "x"); x && !x->is_null()) {
      out.x = Numbers(*x, where + ".x");
      if (out.x.size() != out.y.size()) {
        Fail(where, fmt::format("has {} x values and {} y values; \"x\" and \"y\" must be the "
                                "same length (or leave out \"x\" for x = 0, 1, 2, ...)",
                                out.x.size(), out.y.size()));
      }
    }
    return out;
  }

  std::string file_;
};

void RunPlot(const PlotOptions& o) {
  std::error_code ec;
  if (!fs::exists(o.series, ec)) throw CommandError("series file " + o.series + " does not exist");
  if (fs::is_directory(o.series, ec)) {
    throw CommandError(o.series + " is a directory; --series takes a JSON file");
  }
  StatusOr<Json> root = ReadJsonFile(o.series);
  if (!root.ok()) {
    throw CommandError(root.status().message() +
                       " (--series takes a JSON object with \"panels\"; see `rewire plot --help`)");
  }
  auto [title, charts] = SeriesReader(o.series).Read(*root);

  const int n = static_cast<int>(charts.size());
  const int cols = o.columns > 0 ? std::min(o.columns, n)
                                 : static_cast<int>(std::ceil(std::sqrt(static_cast<double>(n))));
  const int rows = (n + cols - 1) / cols;
  plot::RenderOptions ro;
  ro.columns = cols;
  ro.title = title;
  ro.width = o.width > 0 ? o.width : 600 * cols;
  ro.height = o.height > 0 ? o.height : 400 * rows + (title.empty() ? 0 : 40);

  const fs::path parent = fs::path(o.out).parent_path();
  if (!parent.empty()) {
    fs::create_directories(parent, ec);
    if (ec) throw CommandError("cannot create " + parent.string() + ": " + ec.message());
  }
  StatusOr<plot::Image> image = plot::RenderCharts(charts, ro);
  if (!image.ok()) {
    throw CommandError(image.status().message() +
                       "; give a larger --width/--height, or other --columns");
  }
  Check(plot::WritePng(*image, o.out));
  std::printf("wrote %s (%dx%d, %d panel%s in %d column%s)\n", o.out.c_str(), ro.width, ro.height,
              n, n == 1 ? "" : "s", cols, cols == 1 ? "" : "s");
}

}  // namespace

void RegisterPlot(CLI::App& app) {
  auto* cmd = app.add_subcommand("plot", "Draw line charts of the series in a JSON file (PNG)");
  cmd->footer(
      "The series file is one JSON object:\n"
      "  {\"title\": \"over the whole image (optional)\",\n"
      "   \"panels\": [{\"title\": \"...\", \"x_label\": \"...\", \"y_label\": \"...\",\n"
      "               \"series\": [{\"label\": \"...\", \"x\": [1, 2, 3], \"y\": [1.0, 1.2, "
      "null]}]}]}\n"
      "Panels are drawn left to right, then top to bottom. Only \"panels\", each panel's "
      "\"series\"\nand each series' \"y\" are required; a series without \"x\" is drawn at x = 0, "
      "1, 2, ...;\nnull is a gap in the line; an unlabelled series stays out of the legend. The "
      "image is\n600x400 pixels per panel unless --width/--height say otherwise.\n"
      "Example: rewire plot --series curves.json --out curves.png --columns 2");
  auto o = std::make_shared<PlotOptions>();
  cmd->add_option("--series", o->series, "The JSON file of panels and series (format below)")
      ->required();
  cmd->add_option("--out", o->out, "The PNG file to write (its directory is created)")->required();
  cmd->add_option("--columns", o->columns,
                  "Panels per row (default: ceil(sqrt(panels)): 1, 2, 2, 2, 3, ...)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--width", o->width, "Image width in pixels (default: 600 per column)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--height", o->height,
                  "Image height in pixels (default: 400 per row, and 40 for a title)")
      ->check(CLI::NonNegativeNumber);
  cmd->callback([o]() { RunPlot(*o); });
}

}  // namespace rewire::cli
