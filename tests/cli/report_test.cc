// The line-chart renderer (cli/plot.cc, compiled into this test) and `rewire report` run as
// the real binary on fabricated run directories. PNGs are checked by decoding them here with
// libpng: size, then pixels.

#include <gtest/gtest.h>
#include <png.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "cli/plot.h"
#include "tests/cli/run_util.h"

namespace rewire {
namespace {

using plot::Chart;
using plot::Rgb;
using plot::Series;
using testing::CountLines;
using testing::Quote;
using testing::ReadFile;
using testing::Rewire;
using testing::TempDir;
using testing::WriteFile;

// ---------------------------------------------------------------------------------------------
// PNGs decoded by libpng (its simplified API) into 8-bit RGB.
// ---------------------------------------------------------------------------------------------

struct DecodedPng {
  std::string error;  // empty when decoding succeeded
  uint32_t width = 0, height = 0;
  std::vector<uint8_t> rgb;  // rows top to bottom, 3 bytes per pixel

  Rgb At(uint32_t x, uint32_t y) const {
    const size_t i = (y * static_cast<size_t>(width) + x) * 3;
    return {rgb[i], rgb[i + 1], rgb[i + 2]};
  }
  /// Pixels equal to `c` in the rectangle [x0, x1) x [y0, y1).
  int Count(Rgb c, uint32_t x0, uint32_t y0, uint32_t x1, uint32_t y1) const {
    int n = 0;
    for (uint32_t y = y0; y < y1; ++y) {
      for (uint32_t x = x0; x < x1; ++x) n += At(x, y) == c;
    }
    return n;
  }
  int Count(Rgb c) const { return Count(c, 0, 0, width, height); }
};

/// Decodes with libpng; the header must say 8-bit RGB (what plot.cc writes).
DecodedPng DecodePng(const std::string& png) {
  DecodedPng d;
  png_image image;
  std::memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&image, png.data(), png.size())) {
    d.error = std::string("libpng: ") + image.message;
    return d;
  }
  if (image.format != PNG_FORMAT_RGB) {
    png_image_free(&image);
    d.error = "not an 8-bit RGB PNG (format " + std::to_string(image.format) + ")";
    return d;
  }
  d.width = image.width;
  d.height = image.height;
  d.rgb.resize(PNG_IMAGE_SIZE(image));
  if (!png_image_finish_read(&image, nullptr, d.rgb.data(), 0, nullptr)) {
    d.error = std::string("libpng: ") + image.message;
  }
  return d;
}

DecodedPng Render(const std::vector<Chart>& charts, int width, int height, int columns = 0) {
  plot::RenderOptions o;
  o.width = width;
  o.height = height;
  o.columns = columns;
  auto image = plot::RenderCharts(charts, o);
  EXPECT_TRUE(image.ok()) << image.status().message();
  if (!image.ok()) return {};
  auto png = plot::EncodePng(*image);
  EXPECT_TRUE(png.ok()) << png.status().message();
  DecodedPng d = DecodePng(*png);
  EXPECT_EQ(d.error, "");
  return d;
}

int NonWhite(const DecodedPng& d) {
  return static_cast<int>(d.width * d.height) - d.Count(plot::kWhite);
}

Series Ramp(const std::string& label, int n, double slope, double offset) {
  Series s{label, {}, {}};
  for (int i = 0; i < n; ++i) {
    s.x.push_back(i);
    s.y.push_back(offset + slope * i);
  }
  return s;
}

// ---------------------------------------------------------------------------------------------
// Renderer
// ---------------------------------------------------------------------------------------------

TEST(PlotPng, DecodesToTheRequestedSize) {
  const DecodedPng d = Render({{"title", "x", "y", {Ramp("a", 10, 1, 0)}}}, 640, 400);
  ASSERT_EQ(d.error, "");
  EXPECT_EQ(d.width, 640u);
  EXPECT_EQ(d.height, 400u);
  EXPECT_EQ(d.rgb.size(), 400u * 640u * 3);
}

TEST(PlotPng, AWrittenFileDecodesWithLibpngToTheRenderedPixels) {
  plot::RenderOptions o;
  o.width = 420;
  o.height = 300;
  auto image = plot::RenderCharts({{"Return", "update", "return", {Ramp("a", 30, 1, 0)}}}, o);
  ASSERT_TRUE(image.ok()) << image.status().message();
  const TempDir dir;
  const std::string path = dir / "chart.png";
  ASSERT_TRUE(plot::WritePng(*image, path).ok());

  png_image png;
  std::memset(&png, 0, sizeof png);
  png.version = PNG_IMAGE_VERSION;
  ASSERT_TRUE(png_image_begin_read_from_file(&png, path.c_str())) << png.message;
  EXPECT_EQ(png.width, 420u);
  EXPECT_EQ(png.height, 300u);
  png.format = PNG_FORMAT_RGB;
  std::vector<uint8_t> rgb(PNG_IMAGE_SIZE(png));
  ASSERT_TRUE(png_image_finish_read(&png, nullptr, rgb.data(), 0, nullptr)) << png.message;
  ASSERT_EQ(rgb, image->pixels());
  // Spot checks: the white corner, and some pixel of the line's colour.
  EXPECT_EQ((Rgb{rgb[0], rgb[1], rgb[2]}), plot::kWhite);
  bool line = false;
  for (size_t i = 0; i + 2 < rgb.size(); i += 3)
    line = line || Rgb{rgb[i], rgb[i + 1], rgb[i + 2]} == plot::SeriesColour(0);
  EXPECT_TRUE(line);
}

TEST(PlotPng, IsMostlyWhiteButNotBlank) {
  const DecodedPng d =
      Render({{"Episodic return", "update", "return", {Ramp("a", 50, 2, 1)}}}, 800, 500);
  ASSERT_EQ(d.error, "");
  EXPECT_GT(NonWhite(d), 2000);  // axes, text, the line
  EXPECT_GT(d.Count(plot::kWhite), static_cast<int>(d.width * d.height / 2));
}

TEST(PlotSeries, EachSeriesIsDrawnInItsOwnColour) {
  // Unlabelled series have no legend swatch: any pixel of their colour is the line itself.
  const Rgb c0 = plot::SeriesColour(0), c1 = plot::SeriesColour(1);
  ASSERT_NE(c0, c1);
  const DecodedPng d = Render({{"", "", "", {Ramp("", 40, 1, 0), Ramp("", 40, -1, 0)}}}, 600, 400);
  ASSERT_EQ(d.error, "");
  EXPECT_GT(d.Count(c0), 200);
  EXPECT_GT(d.Count(c1), 200);
}

TEST(PlotSeries, TrailingMeanAveragesTheLastPointsAndSkipsGaps) {
  const Series noisy{"r", {1, 2, 3, 4, 5}, {10, 20, std::nan(""), 40, 0}};
  const Series mean = plot::TrailingMean(noisy, 2, "trend");
  EXPECT_EQ(mean.label, "trend");
  ASSERT_EQ(mean.y.size(), 4u);  // the NaN point is skipped
  EXPECT_EQ(mean.x, (std::vector<double>{1, 2, 4, 5}));
  EXPECT_DOUBLE_EQ(mean.y[0], 10);  // fewer points than the window at the start
  EXPECT_DOUBLE_EQ(mean.y[1], 15);
  EXPECT_DOUBLE_EQ(mean.y[2], 30);  // 20 and 40: the window counts points, not x
  EXPECT_DOUBLE_EQ(mean.y[3], 20);
  EXPECT_EQ(plot::TrailingMean(noisy, 1, "").y, (std::vector<double>{10, 20, 40, 0}));
}

TEST(PlotSeries, PaletteColoursAreDistinct) {
  for (size_t i = 0; i < 10; ++i) {
    for (size_t j = i + 1; j < 10; ++j)
      EXPECT_NE(plot::SeriesColour(i), plot::SeriesColour(j)) << i << " " << j;
    EXPECT_NE(plot::SeriesColour(i), plot::kWhite);
  }
}

TEST(PlotSeries, LegendHasASwatchPerLabelledSeries) {
  // An all-NaN series draws no line; with a label its colour still appears, in the legend.
  const Series labelled{"missing", {0, 1, 2}, {NAN, NAN, NAN}};
  const Series unlabelled{"", {0, 1, 2}, {NAN, NAN, NAN}};
  const DecodedPng with = Render({{"t", "x", "y", {labelled}}}, 600, 400);
  const DecodedPng without = Render({{"t", "x", "y", {unlabelled}}}, 600, 400);
  EXPECT_GT(with.Count(plot::SeriesColour(0)), 20);
  EXPECT_EQ(without.Count(plot::SeriesColour(0)), 0);
}

TEST(PlotSeries, LegendSitsAboveThePlotArea) {
  // A series filling the top of its range: the legend must not cover it. The line's colour
  // appears both in the legend row and along the line near the top of the plot.
  Series flat{"a long legend label for the top series", {0, 1, 2, 3}, {5, 5, 5, 5}};
  Series low{"", {0, 3}, {0, 0}};
  const DecodedPng d = Render({{"t", "x", "y", {flat, low}}}, 600, 400);
  ASSERT_EQ(d.error, "");
  // Rows holding the colour of series 0: the legend swatch rows and the line rows, separated.
  std::vector<uint32_t> rows;
  for (uint32_t y = 0; y < d.height; ++y) {
    if (d.Count(plot::SeriesColour(0), 0, y, d.width, y + 1) > 0) rows.push_back(y);
  }
  ASSERT_FALSE(rows.empty());
  int groups = 1;
  for (size_t i = 1; i < rows.size(); ++i) groups += rows[i] > rows[i - 1] + 1;
  EXPECT_GE(groups, 2) << "legend swatch and line should be on different rows";
  // The line (a constant at the top) spans most of the width on its rows.
  int widest = 0;
  for (uint32_t y : rows)
    widest = std::max(widest, d.Count(plot::SeriesColour(0), 0, y, d.width, y + 1));
  EXPECT_GT(widest, 300);
}

TEST(PlotSeries, NanPointsAreSkipped) {
  Series s{"", {0, 1, 2, 3, 4, 5}, {1, NAN, 3, INFINITY, 2, 4}};
  const DecodedPng d = Render({{"gaps", "x", "y", {s}}}, 600, 400);
  ASSERT_EQ(d.error, "");
  EXPECT_GT(d.Count(plot::SeriesColour(0)), 50);
}

TEST(PlotSeries, ConstantSeriesAndSinglePointAreDrawn) {
  const DecodedPng constant =
      Render({{"c", "x", "y", {Series{"", {0, 1, 2}, {3, 3, 3}}}}}, 600, 400);
  ASSERT_EQ(constant.error, "");
  EXPECT_GT(constant.Count(plot::SeriesColour(0)), 100);
  const DecodedPng single = Render({{"p", "x", "y", {Series{"", {7}, {0.25}}}}}, 600, 400);
  ASSERT_EQ(single.error, "");
  EXPECT_GT(single.Count(plot::SeriesColour(0)), 4);  // a marker
  const DecodedPng zero = Render({{"z", "x", "y", {Series{"", {0, 0}, {0, 0}}}}}, 600, 400);
  ASSERT_EQ(zero.error, "");
  EXPECT_GT(zero.Count(plot::SeriesColour(0)), 4);
}

TEST(PlotSeries, EmptyChartShowsAxesOnly) {
  const DecodedPng d = Render({{"nothing yet", "x", "y", {}}}, 400, 300);
  ASSERT_EQ(d.error, "");
  EXPECT_GT(NonWhite(d), 500);
  EXPECT_EQ(d.Count(plot::SeriesColour(0)), 0);
}

TEST(PlotGrid, FourChartsFillFourQuadrants) {
  std::vector<Chart> charts;
  for (int i = 0; i < 4; ++i)
    charts.push_back({"panel " + std::to_string(i), "update", "", {Ramp("", 20, i + 1, 0)}});
  const DecodedPng d = Render(charts, 800, 600);
  ASSERT_EQ(d.error, "");
  const Rgb c = plot::SeriesColour(0);
  EXPECT_GT(d.Count(c, 0, 0, 400, 300), 100);
  EXPECT_GT(d.Count(c, 400, 0, 800, 300), 100);
  EXPECT_GT(d.Count(c, 0, 300, 400, 600), 100);
  EXPECT_GT(d.Count(c, 400, 300, 800, 600), 100);
}

TEST(PlotTicks, StepsAreOneTwoOrFiveTimesAPowerOfTen) {
  const double ranges[][2] = {{0, 97},     {-0.015, 0.004}, {1, 1.0001}, {0, 3e-7},
                              {-5e6, 7e9}, {2.3, 2.31},     {0, 1}};
  for (const auto& r : ranges) {
    for (int max_ticks : {3, 5, 8, 10}) {
      const plot::Ticks t = plot::NiceTicks(r[0], r[1], max_ticks);
      const double mantissa = t.step / std::pow(10.0, std::floor(std::log10(t.step)));
      EXPECT_TRUE(std::fabs(mantissa - 1) < 1e-9 || std::fabs(mantissa - 2) < 1e-9 ||
                  std::fabs(mantissa - 5) < 1e-9)
          << r[0] << ".." << r[1] << " step " << t.step;
      EXPECT_LE(static_cast<int>(t.values.size()), max_ticks + 1);
      if (max_ticks >= 5) {
        EXPECT_GE(t.values.size(), 2u) << r[0] << ".." << r[1];
      }
      for (size_t i = 0; i < t.values.size(); ++i) {
        EXPECT_GE(t.values[i], r[0] - t.step * 1e-6);
        EXPECT_LE(t.values[i], r[1] + t.step * 1e-6);
        if (i > 0) {
          EXPECT_NEAR(t.values[i] - t.values[i - 1], t.step, t.step * 1e-6);
        }
      }
    }
  }
  const plot::Ticks t = plot::NiceTicks(0, 97, 5);
  EXPECT_EQ(t.step, 20);
  EXPECT_EQ(t.values, (std::vector<double>{0, 20, 40, 60, 80}));
}

TEST(PlotTicks, DegenerateRangesGiveNoTicks) {
  EXPECT_TRUE(plot::NiceTicks(1, 1, 5).values.empty());
  EXPECT_TRUE(plot::NiceTicks(2, 1, 5).values.empty());
  EXPECT_TRUE(plot::NiceTicks(NAN, 1, 5).values.empty());
  EXPECT_TRUE(plot::NiceTicks(0, INFINITY, 5).values.empty());
}

TEST(PlotTicks, LabelsUseTheDecimalsTheStepNeeds) {
  EXPECT_EQ(plot::FormatTick(0, 0.2), "0");
  EXPECT_EQ(plot::FormatTick(0.4, 0.2), "0.4");
  EXPECT_EQ(plot::FormatTick(1500, 500), "1500");
  EXPECT_EQ(plot::FormatTick(-0.01, 0.005), "-0.010");
  EXPECT_EQ(plot::FormatTick(0.0005, 0.0005), "0.0005");
  EXPECT_EQ(plot::FormatTick(1e-7, 1e-7), "1e-7");
  EXPECT_EQ(plot::FormatTick(2.5e-5, 5e-6), "2.5e-5");
  EXPECT_EQ(plot::FormatTick(3e9, 1e9), "3e9");
}

TEST(PlotErrors, BadSizesAndUnwritablePathsAreStatuses) {
  EXPECT_FALSE(plot::RenderCharts({}, {}).ok());
  plot::RenderOptions tiny;
  tiny.width = 100;
  tiny.height = 100;
  EXPECT_FALSE(plot::RenderCharts({Chart{}}, tiny).ok());
  plot::RenderOptions huge;
  huge.width = 100000;
  EXPECT_FALSE(plot::RenderCharts({Chart{}}, huge).ok());
  const Status st = plot::WriteChartsPng({Chart{}}, {}, "/nonexistent-dir/x.png");
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("/nonexistent-dir/x.png"), std::string::npos) << st.message();
}

TEST(PlotErrors, WritePngWritesTheEncodedBytes) {
  TempDir dir;
  auto image = plot::RenderCharts({{"t", "x", "y", {Ramp("a", 5, 1, 0)}}}, {});
  ASSERT_TRUE(image.ok());
  ASSERT_TRUE(plot::WritePng(*image, dir / "a.png").ok());
  EXPECT_EQ(ReadFile(dir / "a.png"), *plot::EncodePng(*image));
  EXPECT_FALSE(std::filesystem::exists(dir / "a.png.tmp"));
}

// ---------------------------------------------------------------------------------------------
// `rewire report`
// ---------------------------------------------------------------------------------------------

/// metrics.jsonl with `n` updates: return 10 + i, return_max 20 + 2i, speedup 1 + 0.01 i,
/// best_speedup the running max (with a peak of 1.5 at update 5), losses on simple curves.
std::string Metrics(int n) {
  std::string text;
  for (int i = 0; i < n; ++i) {
    const double speedup = i == 5 ? 1.5 : 1 + 0.01 * i;
    const double best = i >= 5 ? 1.5 : 1 + 0.01 * i;
    const Json line{{"update", i},
                    {"global_step", 400 * (i + 1)},
                    {"wall_time", 10.0 * (i + 1)},
                    {"policy_version", i},
                    {"charts/episodic_return", 10 + i},
                    {"charts/episodic_return_max", 20 + 2 * i},
                    {"charts/speedup", speedup},
                    {"charts/best_speedup", best},
                    {"charts/SPS", 23.5},
                    {"losses/value_loss", 1.0 / (i + 1)},
                    {"losses/policy_loss", -0.001 * i},
                    {"losses/entropy", 2.5 - 0.05 * i},
                    {"losses/approx_kl", 0.0001 * i},
                    {"losses/clipfrac", 0.05}};
    text += JsonText(line) + "\n";
  }
  return text;
}

TEST(ReportRun, WritesThreePlotsAndASummary) {
  TempDir run;
  WriteFile(run / "metrics.jsonl", Metrics(20));
  auto r = Rewire("report --run " + Quote(run.path()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string out = run / "report";
  for (const char* name : {"return.png", "speedup.png", "losses.png", "summary.md"}) {
    EXPECT_NE(r.output.find(out + "/" + name), std::string::npos)
        << "should print the path: " << r.output;
  }

  const DecodedPng ret = DecodePng(ReadFile(out + "/return.png"));
  ASSERT_EQ(ret.error, "");
  EXPECT_EQ(ret.width, 1000u);
  EXPECT_EQ(ret.height, 560u);
  EXPECT_GT(ret.Count(plot::SeriesColour(0)), 200);  // episodic_return
  EXPECT_GT(ret.Count(plot::SeriesColour(1)), 200);  // episodic_return_max
  const DecodedPng speed = DecodePng(ReadFile(out + "/speedup.png"));
  ASSERT_EQ(speed.error, "");
  EXPECT_GT(speed.Count(plot::SeriesColour(0)), 200);
  EXPECT_GT(speed.Count(plot::SeriesColour(1)), 200);
  const DecodedPng losses = DecodePng(ReadFile(out + "/losses.png"));
  ASSERT_EQ(losses.error, "");
  EXPECT_EQ(losses.width, 1200u);
  EXPECT_EQ(losses.height, 800u);
  for (uint32_t qx : {0u, 600u}) {
    for (uint32_t qy : {0u, 400u}) {
      EXPECT_GT(losses.Count(plot::SeriesColour(0), qx, qy, qx + 600, qy + 400), 100)
          << qx << "," << qy;
    }
  }

  const std::string md = ReadFile(out + "/summary.md");
  EXPECT_NE(md.find("`" + run.path() + "`"), std::string::npos) << md;
  EXPECT_NE(md.find("| Updates | 20 (update 0 to 19) |"), std::string::npos) << md;
  EXPECT_NE(md.find("| Environment steps | 8000 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| Wall time | 3m 20s |"), std::string::npos) << md;
  EXPECT_NE(md.find("| Final speedup | 1.190x |"), std::string::npos) << md;
  EXPECT_NE(md.find("| Best speedup | 1.500x (update 5) |"), std::string::npos) << md;
  // metric | points | first | last | min | max | best (update)
  EXPECT_NE(md.find("| charts/episodic_return | 20 | 10 | 29 | 10 | 29 | 29 (19) |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| charts/episodic_return_max | 20 | 20 | 58 | 20 | 58 | 58 (19) |"),
            std::string::npos);
  EXPECT_NE(md.find("| charts/speedup | 20 | 1 | 1.19 | 1 | 1.5 | 1.5 (5) |"), std::string::npos)
      << md;
  EXPECT_NE(md.find("| losses/value_loss | 20 | 1 | 0.05 | 0.05 | 1 | 0.05 (19) |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| losses/entropy | 20 | 2.5 | 1.55 |"), std::string::npos) << md;
  for (const char* img :
       {"![return](return.png)", "![speedup](speedup.png)", "![losses](losses.png)"}) {
    EXPECT_NE(md.find(img), std::string::npos) << img;
  }
  EXPECT_EQ(md.find("## Evaluation"), std::string::npos);
  EXPECT_EQ(md.find("## Config"), std::string::npos);
}

TEST(ReportRun, OutPutsFilesElsewhere) {
  TempDir run, out;
  WriteFile(run / "metrics.jsonl", Metrics(3));
  auto r = Rewire("report --run " + Quote(run.path()) + " --out " + Quote(out / "r"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(std::filesystem::exists(out / "r/summary.md"));
  EXPECT_TRUE(std::filesystem::exists(out / "r/losses.png"));
  EXPECT_FALSE(std::filesystem::exists(run / "report"));
}

TEST(ReportRun, NullsMissingAndUnknownKeysAreTolerated) {
  TempDir run;
  WriteFile(run / "metrics.jsonl",
            // Hand-written lines: a blank one, a CRLF ending, labels, flags, nulls and an exponent.
            R"({"update": 0, "charts/speedup": 1.1, "losses/entropy": null, "note": "warm-up", )"
            R"("nested_ok": false, "new/metric": 3})"
            "\n\n"
            R"({"update": 1, "charts/speedup": null, "losses/entropy": 2.0})"
            "\r\n"
            R"({"update": 2, "charts/speedup": 1.25, "charts/episodic_return": -3.5e0})"
            "\n");
  auto r = Rewire("report --run " + Quote(run.path()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string md = ReadFile(run / "report/summary.md");
  EXPECT_NE(md.find("| Updates | 3 (update 0 to 2) |"), std::string::npos) << md;
  EXPECT_NE(md.find("| Final speedup | 1.250x |"), std::string::npos) << md;
  EXPECT_NE(md.find("| charts/speedup | 2 | 1.1 | 1.25 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| losses/entropy | 1 | 2 | 2 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| charts/episodic_return | 1 | -3.5 |"), std::string::npos) << md;
  EXPECT_EQ(md.find("new/metric"), std::string::npos);
  EXPECT_NE(md.find("| Wall time | - |"), std::string::npos) << md;
  // Plots are still written, with "no data" panels where a metric never appeared.
  EXPECT_EQ(DecodePng(ReadFile(run / "report/losses.png")).error, "");
}

TEST(ReportRun, MalformedLineIsAnErrorNamingTheLine) {
  // Malformed on purpose, so written by hand.
  const char* bad[] = {
      R"({"update": 1, "charts/speedup": 1.2,})",   // trailing comma
      R"({"update": 1 "charts/speedup": 1.2})",     // missing comma
      R"({"update": 1, "charts/speedup": 01})",     // leading zero
      R"({"update": 1, "charts/speedup": "1.2})",   // unterminated string
      R"([1, 2])",                                  // not an object
      R"({"update": 1, "charts/speedup": [1.2]})",  // nested
      R"({"update": 1} trailing)",                  // text after the object
      R"({"update": "one"})",                       // update not a number
      R"({"update": 1, "update": 2})",              // duplicate key
      R"({"update": 1, "charts/speedup": tru})",    // bad literal
  };
  for (const char* line : bad) {
    TempDir run;
    WriteFile(run / "metrics.jsonl", Metrics(1) + line + "\n" + Metrics(1));
    auto r = Rewire("report --run " + Quote(run.path()));
    EXPECT_EQ(r.exit_code, 1) << line << "\n" << r.output;
    EXPECT_NE(r.output.find(run / "metrics.jsonl:2: "), std::string::npos) << line << "\n"
                                                                           << r.output;
    EXPECT_EQ(CountLines(r.output), 1) << r.output;
    EXPECT_FALSE(std::filesystem::exists(run / "report/summary.md"));
  }
}

TEST(ReportRun, MissingRunDirectoryIsAnError) {
  TempDir dir;
  auto r = Rewire("report --run " + Quote(dir / "no-such-run"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("rewire: error:"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("no-such-run"), std::string::npos) << r.output;
  EXPECT_EQ(CountLines(r.output), 1) << r.output;
}

TEST(ReportRun, MissingMetricsFileIsAnError) {
  TempDir run;
  auto r = Rewire("report --run " + Quote(run.path()));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("metrics.jsonl"), std::string::npos) << r.output;
  EXPECT_EQ(CountLines(r.output), 1) << r.output;
}

TEST(ReportRun, EmptyMetricsFileSaysNoUpdatesYet) {
  TempDir run;
  WriteFile(run / "metrics.jsonl", "\n  \n");
  auto r = Rewire("report --run " + Quote(run.path()));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("no updates recorded yet"), std::string::npos) << r.output;
  EXPECT_EQ(CountLines(r.output), 1) << r.output;
}

TEST(ReportRun, RunIsRequired) {
  auto r = Rewire("report");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("--run"), std::string::npos) << r.output;
  auto help = Rewire("report --help");
  EXPECT_EQ(help.exit_code, 0) << help.output;
  EXPECT_NE(help.output.find("Usage"), std::string::npos);
}

TEST(ReportEval, ResultsBecomeATableOfCostsAndSpeedups) {
  TempDir run;
  WriteFile(run / "metrics.jsonl", Metrics(2));
  WriteFile(run / "eval.json", R"({"policy": "ckpt/policy_40.pt", "results": [
    {"model": "bert", "initial_cost_ms": 1.0, "greedy_policy_cost_ms": 0.8, "sampled_best_cost_ms": 0.75,
     "samples": 8, "baselines": {"greedy": 0.82, "backtrack": 0.79}, "rl_seconds": 3.2, "verified": true,
     "guided_cost_ms": 0.7, "guided_expansions": 400},
    {"model": "squeezenet", "greedy_policy_cost_ms": 2.0, "verified": false}
  ]})");
  auto r = Rewire("report --run " + Quote(run.path()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string md = ReadFile(run / "report/summary.md");
  EXPECT_NE(md.find("## Evaluation"), std::string::npos) << md;
  EXPECT_NE(md.find("`ckpt/policy_40.pt`"), std::string::npos) << md;
  EXPECT_NE(md.find("| model | initial | policy: likeliest rewrite each step | policy: cheapest "
                    "sampled rollout "
                    "| guided search | greedy | "
                    "backtrack | RL "
                    "time (s) | verified |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| bert | 1.0000 | 0.8000 (1.250x) | 0.7500 (1.333x, 8 samples) | 0.7000 "
                    "(1.429x, 400 graphs) | "
                    "0.8200 (1.220x) | "
                    "0.7900 (1.266x) | 3.2 | yes |"),
            std::string::npos)
      << md;
  // Missing fields are dashes; no speedup without the initial cost.
  EXPECT_NE(md.find("| squeezenet | - | 2.0000 | - | - | - | - | - | **NO** |"), std::string::npos)
      << md;
}

TEST(ReportEval, BrokenEvalJsonIsReportedNotFatal) {
  TempDir run;
  WriteFile(run / "metrics.jsonl", Metrics(2));
  WriteFile(run / "eval.json", R"({"results": [)");  // truncated
  auto r = Rewire("report --run " + Quote(run.path()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("warning"), std::string::npos) << r.output;
  EXPECT_NE(ReadFile(run / "report/summary.md").find("eval.json could not be read"),
            std::string::npos);
}

TEST(ReportConfig, ConfigIsCopiedVerbatimInAFence) {
  TempDir run;
  WriteFile(run / "metrics.jsonl", Metrics(2));
  const std::string config = "[ppo]\nlearning_rate = 5e-4  # ``` not a fence\nclip = 0.2\n";
  WriteFile(run / "config.toml", config);
  auto r = Rewire("report --run " + Quote(run.path()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string md = ReadFile(run / "report/summary.md");
  const size_t at = md.find("## Config");
  ASSERT_NE(at, std::string::npos) << md;
  EXPECT_NE(md.find("````toml\n" + config + "````\n", at), std::string::npos) << md;
}

}  // namespace
}  // namespace rewire
