// Line charts into an RGB image, written as PNG with libpng. See plot.h.
//
// Layout of one panel, top to bottom: title, legend (wrapped rows, always outside the plot area
// so it never hides a line), plot area with grid, x tick labels, x label; the y label (rotated)
// and y tick labels sit to the left. Lines are anti-aliased: each series is rasterised into a
// coverage buffer (distance to the segment, max over segments) and composited once, so joints
// do not darken.

#include "cli/plot.h"

#include <png.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

namespace rewire::plot {
namespace {

// ---------------------------------------------------------------------------------------------
// Font: 5x7 glyphs for printable ASCII, drawn as whole pixels. A bitmap font rather than
// FreeType and a font file: the binary needs no font package at run time, and the same text
// gives the same pixels on every machine (no hinting or anti-aliasing that changes between
// FreeType versions), so tests can check exact pixel colours. Chart labels are ASCII.
// `drop` moves a glyph down by that many rows (descenders of g, j, p, q, y and the
// comma/underscore), so a text line is 9 rows tall at scale 1.
// ---------------------------------------------------------------------------------------------

constexpr int kGlyphWidth = 5;
constexpr int kGlyphRows = 7;
constexpr int kLineRows = 9;  // 7 above the baseline + 2 for descenders
constexpr int kAdvance = 6;   // glyph + 1 column of spacing

struct Glyph {
  char c;
  int drop;
  const char* rows[kGlyphRows];
};

// clang-format off
const Glyph kFont[] = {
  {' ', 0, {".....", ".....", ".....", ".....", ".....", ".....", "....."}},
  {'!', 0, {"..#..", "..#..", "..#..", "..#..", "..#..", ".....", "..#.."}},
  {'"', 0, {".#.#.", ".#.#.", ".#.#.", ".....", ".....", ".....", "....."}},
  {'#', 0, {".#.#.", ".#.#.", "#####", ".#.#.", "#####", ".#.#.", ".#.#."}},
  {'$', 0, {"..#..", ".####", "#.#..", ".###.", "..#.#", "####.", "..#.."}},
  {'%', 0, {"##...", "##..#", "...#.", "..#..", ".#...", "#..##", "...##"}},
  {'&', 0, {".##..", "#..#.", "#.#..", ".#...", "#.#.#", "#..#.", ".##.#"}},
  {'\'', 0, {"..#..", "..#..", ".#...", ".....", ".....", ".....", "....."}},
  {'(', 0, {"...#.", "..#..", ".#...", ".#...", ".#...", "..#..", "...#."}},
  {')', 0, {".#...", "..#..", "...#.", "...#.", "...#.", "..#..", ".#..."}},
  {'*', 0, {".....", "..#..", "#.#.#", ".###.", "#.#.#", "..#..", "....."}},
  {'+', 0, {".....", "..#..", "..#..", "#####", "..#..", "..#..", "....."}},
  {',', 1, {".....", ".....", ".....", ".....", ".##..", "..#..", ".#..."}},
  {'-', 0, {".....", ".....", ".....", ".###.", ".....", ".....", "....."}},
  {'.', 0, {".....", ".....", ".....", ".....", ".....", ".##..", ".##.."}},
  {'/', 0, {"....#", "....#", "...#.", "..#..", ".#...", "#....", "#...."}},
  {'0', 0, {".###.", "#...#", "#..##", "#.#.#", "##..#", "#...#", ".###."}},
  {'1', 0, {"..#..", ".##..", "..#..", "..#..", "..#..", "..#..", ".###."}},
  {'2', 0, {".###.", "#...#", "....#", "...#.", "..#..", ".#...", "#####"}},
  {'3', 0, {"#####", "...#.", "..#..", "...#.", "....#", "#...#", ".###."}},
  {'4', 0, {"...#.", "..##.", ".#.#.", "#..#.", "#####", "...#.", "...#."}},
  {'5', 0, {"#####", "#....", "####.", "....#", "....#", "#...#", ".###."}},
  {'6', 0, {"..##.", ".#...", "#....", "####.", "#...#", "#...#", ".###."}},
  {'7', 0, {"#####", "....#", "...#.", "..#..", ".#...", ".#...", ".#..."}},
  {'8', 0, {".###.", "#...#", "#...#", ".###.", "#...#", "#...#", ".###."}},
  {'9', 0, {".###.", "#...#", "#...#", ".####", "....#", "...#.", ".##.."}},
  {':', 0, {".....", ".##..", ".##..", ".....", ".##..", ".##..", "....."}},
  {';', 0, {".....", ".##..", ".##..", ".....", ".##..", "..#..", ".#..."}},
  {'<', 0, {"...#.", "..#..", ".#...", "#....", ".#...", "..#..", "...#."}},
  {'=', 0, {".....", ".....", "#####", ".....", "#####", ".....", "....."}},
  {'>', 0, {".#...", "..#..", "...#.", "....#", "...#.", "..#..", ".#..."}},
  {'?', 0, {".###.", "#...#", "....#", "...#.", "..#..", ".....", "..#.."}},
  {'@', 0, {".###.", "#...#", "....#", ".##.#", "#.#.#", "#.#.#", ".###."}},
  {'A', 0, {".###.", "#...#", "#...#", "#####", "#...#", "#...#", "#...#"}},
  {'B', 0, {"####.", "#...#", "#...#", "####.", "#...#", "#...#", "####."}},
  {'C', 0, {".###.", "#...#", "#....", "#....", "#....", "#...#", ".###."}},
  {'D', 0, {"###..", "#..#.", "#...#", "#...#", "#...#", "#..#.", "###.."}},
  {'E', 0, {"#####", "#....", "#....", "####.", "#....", "#....", "#####"}},
  {'F', 0, {"#####", "#....", "#....", "####.", "#....", "#....", "#...."}},
  {'G', 0, {".###.", "#...#", "#....", "#.###", "#...#", "#...#", ".####"}},
  {'H', 0, {"#...#", "#...#", "#...#", "#####", "#...#", "#...#", "#...#"}},
  {'I', 0, {".###.", "..#..", "..#..", "..#..", "..#..", "..#..", ".###."}},
  {'J', 0, {"..###", "...#.", "...#.", "...#.", "...#.", "#..#.", ".##.."}},
  {'K', 0, {"#...#", "#..#.", "#.#..", "##...", "#.#..", "#..#.", "#...#"}},
  {'L', 0, {"#....", "#....", "#....", "#....", "#....", "#....", "#####"}},
  {'M', 0, {"#...#", "##.##", "#.#.#", "#.#.#", "#...#", "#...#", "#...#"}},
  {'N', 0, {"#...#", "#...#", "##..#", "#.#.#", "#..##", "#...#", "#...#"}},
  {'O', 0, {".###.", "#...#", "#...#", "#...#", "#...#", "#...#", ".###."}},
  {'P', 0, {"####.", "#...#", "#...#", "####.", "#....", "#....", "#...."}},
  {'Q', 0, {".###.", "#...#", "#...#", "#...#", "#.#.#", "#..#.", ".##.#"}},
  {'R', 0, {"####.", "#...#", "#...#", "####.", "#.#..", "#..#.", "#...#"}},
  {'S', 0, {".####", "#....", "#....", ".###.", "....#", "....#", "####."}},
  {'T', 0, {"#####", "..#..", "..#..", "..#..", "..#..", "..#..", "..#.."}},
  {'U', 0, {"#...#", "#...#", "#...#", "#...#", "#...#", "#...#", ".###."}},
  {'V', 0, {"#...#", "#...#", "#...#", "#...#", "#...#", ".#.#.", "..#.."}},
  {'W', 0, {"#...#", "#...#", "#...#", "#.#.#", "#.#.#", "#.#.#", ".#.#."}},
  {'X', 0, {"#...#", "#...#", ".#.#.", "..#..", ".#.#.", "#...#", "#...#"}},
  {'Y', 0, {"#...#", "#...#", ".#.#.", "..#..", "..#..", "..#..", "..#.."}},
  {'Z', 0, {"#####", "....#", "...#.", "..#..", ".#...", "#....", "#####"}},
  {'[', 0, {".###.", ".#...", ".#...", ".#...", ".#...", ".#...", ".###."}},
  {'\\', 0, {"#....", "#....", ".#...", "..#..", "...#.", "....#", "....#"}},
  {']', 0, {".###.", "...#.", "...#.", "...#.", "...#.", "...#.", ".###."}},
  {'^', 0, {"..#..", ".#.#.", "#...#", ".....", ".....", ".....", "....."}},
  {'_', 1, {".....", ".....", ".....", ".....", ".....", ".....", "#####"}},
  {'`', 0, {".#...", "..#..", "...#.", ".....", ".....", ".....", "....."}},
  {'a', 0, {".....", ".....", ".###.", "....#", ".####", "#...#", ".####"}},
  {'b', 0, {"#....", "#....", "####.", "#...#", "#...#", "#...#", "####."}},
  {'c', 0, {".....", ".....", ".####", "#....", "#....", "#....", ".####"}},
  {'d', 0, {"....#", "....#", ".####", "#...#", "#...#", "#...#", ".####"}},
  {'e', 0, {".....", ".....", ".###.", "#...#", "#####", "#....", ".####"}},
  {'f', 0, {"..##.", ".#..#", ".#...", "###..", ".#...", ".#...", ".#..."}},
  {'g', 2, {".####", "#...#", "#...#", "#...#", ".####", "....#", ".###."}},
  {'h', 0, {"#....", "#....", "####.", "#...#", "#...#", "#...#", "#...#"}},
  {'i', 0, {"..#..", ".....", ".##..", "..#..", "..#..", "..#..", ".###."}},
  {'j', 1, {"...#.", ".....", "..##.", "...#.", "...#.", "#..#.", ".##.."}},
  {'k', 0, {"#....", "#....", "#..#.", "#.#..", "##...", "#.#..", "#..#."}},
  {'l', 0, {".##..", "..#..", "..#..", "..#..", "..#..", "..#..", ".###."}},
  {'m', 0, {".....", ".....", "##.#.", "#.#.#", "#.#.#", "#.#.#", "#.#.#"}},
  {'n', 0, {".....", ".....", "####.", "#...#", "#...#", "#...#", "#...#"}},
  {'o', 0, {".....", ".....", ".###.", "#...#", "#...#", "#...#", ".###."}},
  {'p', 2, {"####.", "#...#", "#...#", "#...#", "####.", "#....", "#...."}},
  {'q', 2, {".####", "#...#", "#...#", "#...#", ".####", "....#", "....#"}},
  {'r', 0, {".....", ".....", "#.##.", "##..#", "#....", "#....", "#...."}},
  {'s', 0, {".....", ".....", ".####", "#....", ".###.", "....#", "####."}},
  {'t', 0, {".#...", ".#...", "###..", ".#...", ".#...", ".#..#", "..##."}},
  {'u', 0, {".....", ".....", "#...#", "#...#", "#...#", "#..##", ".##.#"}},
  {'v', 0, {".....", ".....", "#...#", "#...#", "#...#", ".#.#.", "..#.."}},
  {'w', 0, {".....", ".....", "#...#", "#...#", "#.#.#", "#.#.#", ".#.#."}},
  {'x', 0, {".....", ".....", "#...#", ".#.#.", "..#..", ".#.#.", "#...#"}},
  {'y', 2, {"#...#", "#...#", "#...#", "#...#", ".####", "....#", ".###."}},
  {'z', 0, {".....", ".....", "#####", "...#.", "..#..", ".#...", "#####"}},
  {'{', 0, {"...#.", "..#..", "..#..", ".#...", "..#..", "..#..", "...#."}},
  {'|', 0, {"..#..", "..#..", "..#..", "..#..", "..#..", "..#..", "..#.."}},
  {'}', 0, {".#...", "..#..", "..#..", "...#.", "..#..", "..#..", ".#..."}},
  {'~', 0, {".....", ".....", ".#...", "#.#.#", "...#.", ".....", "....."}},
};
// clang-format on
constexpr int kFontSize = static_cast<int>(sizeof(kFont) / sizeof(kFont[0]));
static_assert(kFontSize == 126 - 32 + 1, "one glyph per printable ASCII character");

const Glyph& GlyphFor(char c) {
  const int i = (c >= 32 && c <= 126) ? c - 32 : '?' - 32;
  const Glyph& g = kFont[i];
  REWIRE_CHECK(g.c == static_cast<char>(i + 32));  // the table is in ASCII order
  return g;
}

int TextWidth(const std::string& s, int scale) {
  return s.empty() ? 0 : static_cast<int>(s.size()) * kAdvance * scale - scale;
}

/// Draws `s` with the top of its capitals at (x, y). Vertical text is rotated a quarter turn
/// counter-clockwise: it starts at (x, y) and reads upwards, capitals facing left.
void DrawText(Image& img, int x, int y, const std::string& s, int scale, Rgb colour,
              bool vertical = false, bool bold = false) {
  for (size_t k = 0; k < s.size(); ++k) {
    const Glyph& g = GlyphFor(s[k]);
    const int pen = static_cast<int>(k) * kAdvance * scale;
    for (int row = 0; row < kGlyphRows; ++row) {
      for (int col = 0; col < kGlyphWidth; ++col) {
        if (g.rows[row][col] != '#') continue;
        const int u = pen + col * scale, v = (row + g.drop) * scale;  // along, across the text
        for (int dy = 0; dy < scale; ++dy) {
          for (int dx = 0; dx < scale + (bold ? 1 : 0); ++dx) {
            if (vertical) {
              img.Set(x + v + dy, y - u - dx, colour);
            } else {
              img.Set(x + u + dx, y + v + dy, colour);
            }
          }
        }
      }
    }
  }
}

/// `s` shortened with "..." so that it is at most `max_width` pixels wide.
std::string FitText(const std::string& s, int scale, int max_width) {
  if (TextWidth(s, scale) <= max_width) return s;
  std::string t = s;
  while (!t.empty() && TextWidth(t + "...", scale) > max_width) t.pop_back();
  return t.empty() ? std::string() : t + "...";
}

// ---------------------------------------------------------------------------------------------
// Anti-aliased strokes through a coverage buffer
// ---------------------------------------------------------------------------------------------

/// Coverage in [0, 1] of a w x h region; strokes take the max so overlaps do not accumulate.
class Coverage {
 public:
  Coverage(int w, int h) : w_(w), h_(h), a_(static_cast<size_t>(w) * h, 0.f) {}

  /// A segment of half-width `hw` from (x0, y0) to (x1, y1), region-local pixel coordinates.
  void Segment(double x0, double y0, double x1, double y1, double hw) {
    const double dx = x1 - x0, dy = y1 - y0, len2 = dx * dx + dy * dy;
    const int ax = Clamp(std::floor(std::min(x0, x1) - hw - 1), w_),
              bx = Clamp(std::ceil(std::max(x0, x1) + hw + 1), w_);
    const int ay = Clamp(std::floor(std::min(y0, y1) - hw - 1), h_),
              by = Clamp(std::ceil(std::max(y0, y1) + hw + 1), h_);
    for (int py = ay; py <= by; ++py) {
      for (int px = ax; px <= bx; ++px) {
        const double cx = px + 0.5, cy = py + 0.5;
        double t = len2 > 0 ? ((cx - x0) * dx + (cy - y0) * dy) / len2 : 0.0;
        t = std::clamp(t, 0.0, 1.0);
        const double ex = cx - (x0 + t * dx), ey = cy - (y0 + t * dy);
        Cover(px, py, hw + 0.5 - std::sqrt(ex * ex + ey * ey));
      }
    }
  }

  /// A filled disc of radius `r` centred at (x, y).
  void Disc(double x, double y, double r) { Segment(x, y, x, y, r); }

  /// Blends `colour` onto `img` (region origin at (ox, oy)) and clears the buffer.
  void Composite(Image& img, int ox, int oy, Rgb colour) {
    for (int y = 0; y < h_; ++y) {
      for (int x = 0; x < w_; ++x) {
        float& a = a_[static_cast<size_t>(y) * w_ + x];
        if (a > 0) img.Blend(ox + x, oy + y, colour, a);
        a = 0;
      }
    }
  }

 private:
  static int Clamp(double v, int n) {
    if (!(v > 0)) return 0;  // also NaN
    return v >= n - 1 ? n - 1 : static_cast<int>(v);
  }
  void Cover(int x, int y, double a) {
    if (a <= 0) return;
    float& p = a_[static_cast<size_t>(y) * w_ + x];
    p = std::max(p, static_cast<float>(std::min(a, 1.0)));
  }

  int w_, h_;
  std::vector<float> a_;
};

void FillRect(Image& img, int x0, int y0, int w, int h, Rgb c) {
  for (int y = y0; y < y0 + h; ++y) {
    for (int x = x0; x < x0 + w; ++x) img.Set(x, y, c);
  }
}

// ---------------------------------------------------------------------------------------------
// One panel
// ---------------------------------------------------------------------------------------------

constexpr Rgb kText{34, 34, 34};
constexpr Rgb kAxis{90, 90, 90};
constexpr Rgb kGrid{228, 228, 228};
constexpr Rgb kMuted{150, 150, 150};

struct Range {
  double lo = 0, hi = 1;
  bool any = false;
  void Add(double v) {
    if (!std::isfinite(v)) return;
    lo = any ? std::min(lo, v) : v;
    hi = any ? std::max(hi, v) : v;
    any = true;
  }
  /// Gives an empty or single-valued range a width, then pads by `margin` of the width.
  void Finish(double margin) {
    if (!any) {
      lo = 0, hi = 1;
      return;
    }
    if (!(hi - lo > 0) || !std::isfinite(hi - lo)) {
      const double mid = lo / 2 + hi / 2;
      const double d = (std::isfinite(hi - lo) && std::fabs(mid) > 0) ? std::fabs(mid) * 0.05 : 1.0;
      lo = mid - d, hi = mid + d;
      if (!std::isfinite(hi - lo)) lo = -1e300, hi = 1e300;
      return;
    }
    const double pad = (hi - lo) * margin;
    lo -= pad, hi += pad;
  }
};

size_t PointCount(const Series& s) {
  return s.x.empty() ? s.y.size() : std::min(s.x.size(), s.y.size());
}
double PointX(const Series& s, size_t i) { return s.x.empty() ? static_cast<double>(i) : s.x[i]; }

struct Rect {
  int x, y, w, h;
};

struct LegendEntry {
  std::string text;
  Rgb colour;
  int x, y;  // swatch origin relative to the legend block
};

/// Where everything of one panel goes: text sizes, title and legend, value ranges, ticks and the
/// plot area. Computed once by LayoutPanel, then drawn piece by piece.
struct PanelLayout {
  Rect panel{};
  int s = 1;  // text scale
  int text_h = 0, line_h = 0, pad = 0, tick_len = 0, swatch_w = 0;
  std::string title;
  int title_y = 0;
  std::vector<LegendEntry> legend;
  int legend_y = 0;
  Range xr, yr;
  bool has_data = false;
  Ticks xt, yt;
  Rect plot{};

  /// Plot-area pixel column of x value `x` (relative to plot.x) and row of y value `y`.
  double X(double x) const { return (x - xr.lo) / (xr.hi - xr.lo) * (plot.w - 1); }
  double Y(double y) const { return (yr.hi - y) / (yr.hi - yr.lo) * (plot.h - 1); }
};

/// Legend rows, wrapped to the panel width; returns the number of rows.
int LayoutLegend(const Chart& chart, PanelLayout& l) {
  const int s = l.s;
  const int max_w = l.panel.w - 2 * l.pad;
  int rows = 0, x = 0;
  for (size_t i = 0; i < chart.series.size(); ++i) {
    if (chart.series[i].label.empty()) continue;
    const std::string text = FitText(chart.series[i].label, s, max_w - l.swatch_w - 3 * s);
    const int w = l.swatch_w + 3 * s + TextWidth(text, s);
    if (rows == 0) rows = 1;
    if (x > 0 && x + w > max_w) {
      x = 0;
      ++rows;
    }
    l.legend.push_back({text, SeriesColour(i), x, (rows - 1) * (l.line_h + 2 * s)});
    x += w + 6 * s;
  }
  return rows;
}

/// The x ticks: as many as fit with their labels a few characters apart; whole numbers only when
/// every x value is whole (update numbers).
Ticks LayoutXTicks(const PanelLayout& l, bool integer_x, int width) {
  Ticks xt;
  for (int n = 10; n >= 2; --n) {
    xt = NiceTicks(l.xr.lo, l.xr.hi, n);
    if (l.has_data && integer_x && xt.step < 1) {
      xt.step = 1;
      xt.values.clear();
      for (double v = std::ceil(l.xr.lo); v <= l.xr.hi; ++v) xt.values.push_back(v);
    }
    int widest = 0;
    for (double v : xt.values) widest = std::max(widest, TextWidth(FormatTick(v, xt.step), l.s));
    if (static_cast<int>(xt.values.size()) * (widest + 4 * kAdvance * l.s) <= width) break;
  }
  return xt;
}

PanelLayout LayoutPanel(const Chart& chart, Rect panel) {
  PanelLayout l;
  l.panel = panel;
  // Text sizes follow the panel: 2x font on ordinary panels, 1x on small ones.
  const int s = l.s = (panel.w >= 420 && panel.h >= 280) ? 2 : 1;
  l.text_h = kGlyphRows * s, l.line_h = kLineRows * s;
  l.pad = 6 * s, l.tick_len = 3 * s;
  l.swatch_w = 12 * s;

  int top = panel.y + l.pad;
  l.title = FitText(chart.title, s, panel.w - 2 * l.pad);
  l.title_y = top;
  if (!l.title.empty()) top += l.line_h + l.pad;
  const int legend_rows = LayoutLegend(chart, l);
  l.legend_y = top;
  if (legend_rows > 0) top += legend_rows * (l.line_h + 2 * s) + s;
  top += 2 * s;

  const int x_ticks_h = l.tick_len + 2 * s + l.line_h;
  const int x_label_h = chart.x_label.empty() ? 0 : l.line_h + 2 * s;
  const int bottom = panel.y + panel.h - l.pad - x_label_h - x_ticks_h;
  const int plot_h = bottom - top;

  bool integer_x = true;  // x values like update numbers get no fractional ticks
  for (const Series& se : chart.series) {
    for (size_t i = 0; i < PointCount(se); ++i) {
      if (!std::isfinite(PointX(se, i)) || !std::isfinite(se.y[i])) continue;
      l.xr.Add(PointX(se, i));
      l.yr.Add(se.y[i]);
      integer_x = integer_x && PointX(se, i) == std::floor(PointX(se, i));
    }
  }
  l.has_data = l.xr.any;
  l.xr.Finish(0.0);
  l.yr.Finish(0.05);

  l.yt = NiceTicks(l.yr.lo, l.yr.hi, std::clamp(plot_h / (l.text_h * 4), 2, 10));
  int y_tick_w = 0;
  for (double v : l.yt.values) {
    y_tick_w = std::max(y_tick_w, TextWidth(FormatTick(v, l.yt.step), s));
  }
  const int y_label_w = chart.y_label.empty() ? 0 : l.line_h + 5 * s;
  const int left = panel.x + l.pad + y_label_w + y_tick_w + l.tick_len + 2 * s;
  const int right = panel.x + panel.w - l.pad - 4 * s;
  l.xt = LayoutXTicks(l, integer_x, right - left);
  int last_label_half = 0;
  if (!l.xt.values.empty()) {
    last_label_half = TextWidth(FormatTick(l.xt.values.back(), l.xt.step), s) / 2;
  }
  l.plot = Rect{left, top, std::max(1, right - std::max(0, last_label_half - 4 * s) - left),
                std::max(1, plot_h)};
  return l;
}

/// Title, centred over the plot area when it fits there, else over the panel; the legend.
void DrawTitleAndLegend(Image& img, const PanelLayout& l) {
  const int s = l.s;
  if (!l.title.empty()) {
    const int tw = TextWidth(l.title, s);
    int tx = l.plot.x + (l.plot.w - tw) / 2;
    if (tx < l.panel.x + l.pad || tx + tw > l.panel.x + l.panel.w - l.pad) {
      tx = l.panel.x + (l.panel.w - tw) / 2;
    }
    DrawText(img, tx, l.title_y, l.title, s, kText, false, true);
  }
  for (const LegendEntry& e : l.legend) {
    const int x = l.plot.x + e.x, y = l.legend_y + e.y;
    FillRect(img, x, y + l.text_h / 2 - s, l.swatch_w, 2 * s + 1, e.colour);
    DrawText(img, x + l.swatch_w + 3 * s, y, e.text, s, kText);
  }
}

void DrawGrid(Image& img, const PanelLayout& l) {
  const Rect& plot = l.plot;
  for (double v : l.yt.values) {
    const int y = plot.y + static_cast<int>(std::lround(l.Y(v)));
    for (int x = plot.x; x < plot.x + plot.w; ++x) img.Set(x, y, kGrid);
  }
  for (double v : l.xt.values) {
    const int x = plot.x + static_cast<int>(std::lround(l.X(v)));
    for (int y = plot.y; y < plot.y + plot.h; ++y) img.Set(x, y, kGrid);
  }
}

/// Each series anti-aliased into a coverage buffer, then composited in its colour; markers on
/// sparse series and on isolated points.
void DrawSeries(Image& img, const Chart& chart, const PanelLayout& l) {
  const Rect& plot = l.plot;
  Coverage cov(plot.w, plot.h);
  for (size_t k = 0; k < chart.series.size(); ++k) {
    const Series& se = chart.series[k];
    const size_t n = PointCount(se);
    size_t finite = 0;
    for (size_t i = 0; i < n; ++i) finite += std::isfinite(PointX(se, i)) && std::isfinite(se.y[i]);
    const bool markers = finite <= 40;
    const double hw =
        (static_cast<int>(finite) > plot.w / 4 ? 0.5 : 0.75) * l.s + 0.25;  // dense: thinner
    bool have_prev = false;
    double x0 = 0, y0 = 0;
    for (size_t i = 0; i < n; ++i) {
      if (!std::isfinite(PointX(se, i)) || !std::isfinite(se.y[i])) {
        have_prev = false;  // a missing point breaks the line
        continue;
      }
      const double x1 = l.X(PointX(se, i)) + 0.5, y1 = l.Y(se.y[i]) + 0.5;
      const bool has_next =
          i + 1 < n && std::isfinite(PointX(se, i + 1)) && std::isfinite(se.y[i + 1]);
      if (have_prev) cov.Segment(x0, y0, x1, y1, hw);
      if (markers || (!have_prev && !has_next)) cov.Disc(x1, y1, hw + 1.0 * l.s);
      x0 = x1, y0 = y1, have_prev = true;
    }
    cov.Composite(img, plot.x, plot.y, SeriesColour(k));
  }
  if (!l.has_data) {
    const std::string msg = "no data";
    DrawText(img, plot.x + (plot.w - TextWidth(msg, l.s)) / 2, plot.y + (plot.h - l.text_h) / 2,
             msg, l.s, kMuted);
  }
}

/// The frame, the ticks with their labels and the axis labels, over the series.
void DrawAxes(Image& img, const Chart& chart, const PanelLayout& l) {
  const Rect& plot = l.plot;
  const int s = l.s;
  for (int x = plot.x - 1; x <= plot.x + plot.w; ++x) {
    img.Set(x, plot.y - 1, kAxis);
    img.Set(x, plot.y + plot.h, kAxis);
  }
  for (int y = plot.y - 1; y <= plot.y + plot.h; ++y) {
    img.Set(plot.x - 1, y, kAxis);
    img.Set(plot.x + plot.w, y, kAxis);
  }
  for (double v : l.yt.values) {
    const int y = plot.y + static_cast<int>(std::lround(l.Y(v)));
    FillRect(img, plot.x - 1 - l.tick_len, y, l.tick_len, 1, kAxis);
    const std::string label = FormatTick(v, l.yt.step);
    DrawText(img, plot.x - 1 - l.tick_len - 2 * s - TextWidth(label, s), y - l.text_h / 2, label, s,
             kText);
  }
  for (double v : l.xt.values) {
    const int x = plot.x + static_cast<int>(std::lround(l.X(v)));
    FillRect(img, x, plot.y + plot.h + 1, 1, l.tick_len, kAxis);
    const std::string label = FormatTick(v, l.xt.step);
    DrawText(img, x - TextWidth(label, s) / 2, plot.y + plot.h + 1 + l.tick_len + 2 * s, label, s,
             kText);
  }
  if (!chart.x_label.empty()) {
    const std::string label = FitText(chart.x_label, s, l.panel.w - 2 * l.pad);
    const int lw = TextWidth(label, s);
    DrawText(img, std::max(l.panel.x + l.pad, plot.x + (plot.w - lw) / 2),
             l.panel.y + l.panel.h - l.pad - l.line_h, label, s, kText);
  }
  if (!chart.y_label.empty()) {
    const std::string label = FitText(chart.y_label, s, plot.h);
    const int lw = TextWidth(label, s);
    DrawText(img, l.panel.x + l.pad, plot.y + (plot.h + lw) / 2, label, s, kText, true);
  }
}

/// One chart in `panel`: layout, then title and legend, grid, series, and the axes over them.
void DrawPanel(Image& img, const Chart& chart, Rect panel) {
  const PanelLayout l = LayoutPanel(chart, panel);
  DrawTitleAndLegend(img, l);
  DrawGrid(img, l);
  DrawSeries(img, chart, l);
  DrawAxes(img, chart, l);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Public API
// ---------------------------------------------------------------------------------------------

Image::Image(int width, int height, Rgb fill)
    : width_(std::max(0, width)), height_(std::max(0, height)) {
  pixels_.resize(static_cast<size_t>(width_) * height_ * 3);
  for (size_t i = 0; i < pixels_.size(); i += 3) {
    pixels_[i] = fill.r, pixels_[i + 1] = fill.g, pixels_[i + 2] = fill.b;
  }
}

Rgb Image::At(int x, int y) const {
  REWIRE_CHECK(x >= 0 && y >= 0 && x < width_ && y < height_);
  const size_t i = (static_cast<size_t>(y) * width_ + x) * 3;
  return {pixels_[i], pixels_[i + 1], pixels_[i + 2]};
}

void Image::Set(int x, int y, Rgb c) {
  if (x < 0 || y < 0 || x >= width_ || y >= height_) return;
  const size_t i = (static_cast<size_t>(y) * width_ + x) * 3;
  pixels_[i] = c.r, pixels_[i + 1] = c.g, pixels_[i + 2] = c.b;
}

void Image::Blend(int x, int y, Rgb c, double alpha) {
  if (x < 0 || y < 0 || x >= width_ || y >= height_) return;
  alpha = std::clamp(alpha, 0.0, 1.0);
  const size_t i = (static_cast<size_t>(y) * width_ + x) * 3;
  auto mix = [alpha](uint8_t under, uint8_t over) {
    return static_cast<uint8_t>(std::lround(under + (over - under) * alpha));
  };
  pixels_[i] = mix(pixels_[i], c.r);
  pixels_[i + 1] = mix(pixels_[i + 1], c.g);
  pixels_[i + 2] = mix(pixels_[i + 2], c.b);
}

Rgb SeriesColour(size_t index) {
  // Matplotlib's "tab10": distinct, and readable on white.
  static constexpr Rgb kPalette[] = {
      {31, 119, 180}, {255, 127, 14},  {44, 160, 44},   {214, 39, 40},  {148, 103, 189},
      {140, 86, 75},  {227, 119, 194}, {127, 127, 127}, {188, 189, 34}, {23, 190, 207}};
  return kPalette[index % (sizeof(kPalette) / sizeof(kPalette[0]))];
}

Ticks NiceTicks(double lo, double hi, int max_ticks) {
  Ticks t;
  if (!std::isfinite(lo) || !std::isfinite(hi) || !(hi > lo) || !std::isfinite(hi - lo)) return t;
  const double raw = (hi - lo) / std::max(1, max_ticks);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double norm = raw / mag;
  t.step = (norm <= 1 ? 1 : norm <= 2 ? 2 : norm <= 5 ? 5 : 10) * mag;
  const double eps = t.step * 1e-9;
  const double first = std::ceil((lo - eps) / t.step), last = std::floor((hi + eps) / t.step);
  for (double k = first; k <= last; ++k) {
    const double v = k * t.step;
    t.values.push_back(v == 0 ? 0.0 : v);  // no "-0"
  }
  return t;
}

std::string FormatTick(double value, double step) {
  if (value == 0 || !std::isfinite(value)) return value == 0 ? "0" : std::to_string(value);
  const double a = std::fabs(value);
  if (step >= 1e-4 && a < 1e7) {
    const int decimals = std::max(0, static_cast<int>(std::ceil(-std::log10(step) - 1e-9)));
    return fmt::format("{:.{}f}", value, decimals);
  }
  // Scientific: enough digits to tell neighbouring ticks apart; "1e-05" becomes "1e-5".
  const int digits = std::clamp(
      static_cast<int>(std::floor(std::log10(a)) - std::floor(std::log10(step))) + 1, 1, 15);
  std::string s = fmt::format("{:.{}g}", value, digits);
  const size_t e = s.find('e');
  if (e != std::string::npos) {
    size_t d = e + 1;
    if (d < s.size() && s[d] == '+') s.erase(d, 1);
    if (d < s.size() && s[d] == '-') ++d;
    while (d + 1 < s.size() && s[d] == '0') s.erase(d, 1);
  }
  return s;
}

StatusOr<Image> RenderCharts(const std::vector<Chart>& charts, const RenderOptions& options) {
  if (charts.empty()) return InvalidArgument("no charts to render");
  const int n = static_cast<int>(charts.size());
  const int cols = options.columns > 0
                       ? std::min(options.columns, n)
                       : static_cast<int>(std::ceil(std::sqrt(static_cast<double>(n))));
  const int rows = (n + cols - 1) / cols;
  if (options.width > 16384 || options.height > 16384) {
    return InvalidArgument("image size " + std::to_string(options.width) + "x" +
                           std::to_string(options.height) + " is larger than 16384");
  }
  // The title band: one line of bold text, 2x on images wide enough for it.
  const int ts = options.width >= 600 ? 2 : 1;
  const int band = options.title.empty() ? 0 : kLineRows * ts + 12 * ts;
  if (options.width < 200 * cols || options.height - band < 150 * rows) {
    return InvalidArgument(
        "image size " + std::to_string(options.width) + "x" + std::to_string(options.height) +
        " is too small for " + std::to_string(cols) + "x" + std::to_string(rows) +
        " panels (each needs 200x150" +
        (band ? ", below a title band of " + std::to_string(band) + " rows" : "") + ")");
  }
  Image img(options.width, options.height, kWhite);
  if (band > 0) {
    const std::string title = FitText(options.title, ts, options.width - 12 * ts);
    DrawText(img, (options.width - TextWidth(title, ts)) / 2, 8 * ts, title, ts, kText, false,
             true);
  }
  const int height = options.height - band;
  for (int i = 0; i < n; ++i) {
    const int c = i % cols, r = i / cols;
    const int x0 = options.width * c / cols, x1 = options.width * (c + 1) / cols;
    const int y0 = band + height * r / rows, y1 = band + height * (r + 1) / rows;
    DrawPanel(img, charts[i], {x0, y0, x1 - x0, y1 - y0});
  }
  return img;
}

StatusOr<std::string> EncodePng(const Image& image) {
  if (image.width() <= 0 || image.height() <= 0) return InvalidArgument("empty image");
  // libpng's simplified API: errors come back as a return value and png.message.
  png_image png;
  std::memset(&png, 0, sizeof png);
  png.version = PNG_IMAGE_VERSION;
  png.width = static_cast<png_uint_32>(image.width());
  png.height = static_cast<png_uint_32>(image.height());
  png.format = PNG_FORMAT_RGB;
  png_alloc_size_t size = 0;
  const void* pixels = image.pixels().data();
  if (!png_image_write_to_memory(&png, nullptr, &size, 0, pixels, 0, nullptr)) {
    return Internal(std::string("libpng cannot encode the image: ") + png.message);
  }
  std::string out(size, '\0');
  if (!png_image_write_to_memory(&png, out.data(), &size, 0, pixels, 0, nullptr)) {
    return Internal(std::string("libpng cannot encode the image: ") + png.message);
  }
  out.resize(size);
  return out;
}

Status WritePng(const Image& image, const std::string& path) {
  REWIRE_ASSIGN_OR_RETURN(const std::string png, EncodePng(image));
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) return NotFound("cannot write " + path + ": " + std::strerror(errno));
    f.write(png.data(), static_cast<std::streamsize>(png.size()));
    if (!f.flush()) {
      f.close();
      std::error_code ignored;
      std::filesystem::remove(tmp, ignored);
      return DataLoss("cannot write " + path + ": " + std::strerror(errno));
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    return DataLoss("cannot write " + path + ": " + ec.message());
  }
  return Status::Ok();
}

Status WriteChartsPng(const std::vector<Chart>& charts, const RenderOptions& options,
                      const std::string& path) {
  REWIRE_ASSIGN_OR_RETURN(const Image image, RenderCharts(charts, options));
  return WritePng(image, path);
}

Series TrailingMean(const Series& series, size_t window, const std::string& label) {
  Series out{label, {}, {}};
  const size_t n = series.x.empty() ? series.y.size() : std::min(series.x.size(), series.y.size());
  std::vector<double> recent;
  for (size_t i = 0; i < n; ++i) {
    const double x = series.x.empty() ? static_cast<double>(i) : series.x[i];
    if (!std::isfinite(x) || !std::isfinite(series.y[i])) continue;
    recent.push_back(series.y[i]);
    if (window > 0 && recent.size() > window) recent.erase(recent.begin());
    double sum = 0;
    for (double v : recent) sum += v;
    out.x.push_back(x);
    out.y.push_back(window <= 1 ? series.y[i] : sum / recent.size());
  }
  return out;
}

}  // namespace rewire::plot
