#pragma once
// A small line-chart renderer for `rewire report`: charts drawn into an RGB image with an
// embedded bitmap font (plot.cc says why), written as PNG through libpng. No plotting program,
// no LibTorch.

#include <cstdint>
#include <string>
#include <vector>

#include "graph/status.h"

namespace rewire::plot {

// ---------------------------------------------------------------------------------------------
// Data
// ---------------------------------------------------------------------------------------------

/// One line of a chart. Points are (x[i], y[i]) for i < min(x.size(), y.size()); when x is
/// empty, x[i] = i. A point with a non-finite coordinate is skipped and breaks the line there.
/// An empty label keeps the series out of the legend.
struct Series {
  std::string label;
  std::vector<double> x, y;
};

/// One panel: a title, axis labels and its series (coloured by position: series i gets
/// SeriesColour(i)). A chart with no finite point is drawn as empty axes saying "no data".
struct Chart {
  std::string title, x_label, y_label;
  std::vector<Series> series;
};

struct Rgb {
  uint8_t r = 0, g = 0, b = 0;
  bool operator==(const Rgb& o) const { return r == o.r && g == o.g && b == o.b; }
  bool operator!=(const Rgb& o) const { return !(*this == o); }
};

/// An 8-bit RGB image, rows top to bottom.
class Image {
 public:
  Image(int width, int height, Rgb fill);
  int width() const { return width_; }
  int height() const { return height_; }
  /// The pixel at (x, y); both must be inside the image.
  Rgb At(int x, int y) const;
  /// Sets a pixel; outside the image does nothing.
  void Set(int x, int y, Rgb c);
  /// Blends `c` over the pixel with opacity `alpha` in [0, 1]; outside the image does nothing.
  void Blend(int x, int y, Rgb c, double alpha);
  /// Tightly packed RGB bytes, 3 * width * height.
  const std::vector<uint8_t>& pixels() const { return pixels_; }

 private:
  int width_, height_;
  std::vector<uint8_t> pixels_;
};

// ---------------------------------------------------------------------------------------------
// Rendering
// ---------------------------------------------------------------------------------------------

struct RenderOptions {
  int width = 1000;  ///< Image width in pixels (all panels together).
  int height = 560;  ///< Image height in pixels.
  int columns = 0;   ///< Panels per row; 0 picks ceil(sqrt(number of charts)).
  /// A title over the whole image, in a band above the panels (none when empty).
  std::string title;
};

/// `series` with each y replaced by the mean of the last `window` points up to it (fewer at the
/// start; non-finite points are skipped): the trend through a noisy training curve. A window of
/// 0 or 1 returns the points unchanged. The label is `label`.
Series TrailingMean(const Series& series, size_t window, const std::string& label);

/// The colour of series `index` (a 10-colour palette, repeating).
Rgb SeriesColour(size_t index);
/// White, the background.
inline constexpr Rgb kWhite{255, 255, 255};

/// Axis ticks: multiples of `step`, a 1-2-5 x 10^k number.
struct Ticks {
  double step = 1;
  std::vector<double> values;
};
/// The multiples of the smallest 1-2-5 step giving at most max_ticks + 1 ticks that lie in
/// [lo, hi] (lo < hi, both finite; otherwise no values).
Ticks NiceTicks(double lo, double hi, int max_ticks);
/// A tick value printed with as many decimals as `step` needs ("0.25", "1500", "1e-07").
std::string FormatTick(double value, double step);

/// Renders `charts` as a grid of panels, left to right then top to bottom, below the title band
/// when options.title is set. Errors: no charts, or a size too small for the panels (each needs
/// at least 200 x 150 below the title band) or larger than 16384.
StatusOr<Image> RenderCharts(const std::vector<Chart>& charts, const RenderOptions& options);

/// The PNG encoding of `image` (8-bit RGB, no interlace), by libpng.
StatusOr<std::string> EncodePng(const Image& image);
/// Writes `image` as a PNG file (through a temporary file and a rename).
Status WritePng(const Image& image, const std::string& path);
/// RenderCharts then WritePng.
Status WriteChartsPng(const std::vector<Chart>& charts, const RenderOptions& options,
                      const std::string& path);

}  // namespace rewire::plot
