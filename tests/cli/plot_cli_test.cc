// `rewire plot` run as the real binary on series files written here: the PNG's signature and the
// size its IHDR chunk declares, that the pixels follow the series, and the errors of bad files.

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <string>

#include "tests/cli/run_util.h"

namespace rewire {
namespace {

using testing::Quote;
using testing::ReadFile;
using testing::Rewire;
using testing::TempDir;
using testing::WriteFile;

/// The width and height an IHDR chunk declares; {0, 0} (and a test failure) when `png` does not
/// start with the PNG signature and an IHDR chunk.
std::pair<uint32_t, uint32_t> PngSize(const std::string& png) {
  const std::string signature("\x89PNG\r\n\x1a\n", 8);
  if (png.size() < 24 || png.compare(0, 8, signature) != 0 || png.compare(12, 4, "IHDR") != 0) {
    ADD_FAILURE() << "not a PNG with an IHDR chunk (" << png.size() << " bytes)";
    return {0, 0};
  }
  const auto be32 = [&](size_t at) {
    uint32_t v = 0;
    for (size_t i = 0; i < 4; ++i) v = v << 8 | static_cast<uint8_t>(png[at + i]);
    return v;
  };
  return {be32(16), be32(20)};
}

/// A series file of `panels` panels with two series each; the second series' last y is `last`.
std::string SeriesFile(int panels, double last, const std::string& title = "") {
  Json root = Json::object();
  if (!title.empty()) root["title"] = title;
  Json list = Json::array();
  for (int p = 0; p < panels; ++p) {
    list.push_back({{"title", "panel " + std::to_string(p)},
                    {"x_label", "real measurements"},
                    {"y_label", "speedup (x)"},
                    {"series",
                     {{{"label", "ppo-gnn"}, {"x", {0, 4, 8, 12}}, {"y", {1.0, 1.1, 1.2, 1.25}}},
                      {{"label", "world-model"}, {"x", {0, 2, 4}}, {"y", {1.0, 1.3, last}}}}}});
  }
  root["panels"] = list;
  return JsonText(root);
}

TEST(PlotCli, WritesAPngOfTheSizeItAsksTheRendererFor) {
  TempDir dir;
  WriteFile(dir / "s.json", SeriesFile(3, 1.4));
  // Three panels in two columns: two rows of 600x400 panels.
  auto r = Rewire("plot --series " + Quote(dir / "s.json") + " --out " + Quote(dir / "a.png") +
                  " --columns 2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("wrote " + dir / "a.png" + " (1200x800, 3 panels in 2 columns)"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(PngSize(ReadFile(dir / "a.png")), std::make_pair(1200u, 800u));

  // One column, a title band, an explicit size, into a directory that does not exist yet.
  WriteFile(dir / "t.json", SeriesFile(2, 1.4, "world model against PPO"));
  r = Rewire("plot --series " + Quote(dir / "t.json") + " --out " + Quote(dir / "sub/b.png") +
             " --columns 1 --width 700 --height 900");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(PngSize(ReadFile(dir / "sub/b.png")), std::make_pair(700u, 900u));
  r = Rewire("plot --series " + Quote(dir / "t.json") + " --out " + Quote(dir / "c.png"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(PngSize(ReadFile(dir / "c.png")), std::make_pair(1200u, 440u));  // 2 columns + title
}

TEST(PlotCli, TheImageFollowsTheSeriesAndTheTitle) {
  TempDir dir;
  const auto plot = [&](const std::string& name, const std::string& json) {
    WriteFile(dir / (name + ".json"), json);
    const auto r = Rewire("plot --series " + Quote(dir / (name + ".json")) + " --out " +
                          Quote(dir / (name + ".png")));
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return ReadFile(dir / (name + ".png"));
  };
  const std::string a = plot("a", SeriesFile(1, 1.4));
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(plot("same", SeriesFile(1, 1.4)), a) << "the same series should give the same bytes";
  EXPECT_NE(plot("moved", SeriesFile(1, 1.1)), a) << "one point moved: the image should change";
  EXPECT_NE(plot("titled", SeriesFile(1, 1.4, "a title")), a);
}

TEST(PlotCli, BadSeriesFilesAreErrorsNamingTheField) {
  TempDir dir;
  struct Case {
    std::string json, expected;
  };
  const Case cases[] = {
      {"{\"panels\": [{\"series\": [{\"x\": [1, 2, 3], \"y\": [1, 2]}]}]}",
       "panels[0].series[0] has 3 x values and 2 y values"},
      {"{\"title\": \"t\"}", "\"panels\" is missing"},
      {"{\"panels\": []}", "\"panels\" is empty"},
      {"{\"panels\": [{\"series\": [{\"y\": [1, \"2\"]}]}]}",
       "panels[0].series[0].y[1] is a string; expected a number"},
      {"{\"panels\": [{\"xlabel\": \"x\", \"series\": []}]}",
       "panels[0] has an unknown key \"xlabel\""},
      {"{\"panels\": [{\"title\": \"no series\"}]}", "panels[0] has no \"series\""},
      {"{\"panels\": [", "parse error"},
  };
  for (const Case& c : cases) {
    WriteFile(dir / "bad.json", c.json);
    const auto r =
        Rewire("plot --series " + Quote(dir / "bad.json") + " --out " + Quote(dir / "bad.png"));
    EXPECT_EQ(r.exit_code, 1) << c.json << "\n" << r.output;
    EXPECT_NE(r.output.find(dir / "bad.json"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(c.expected), std::string::npos) << c.json << "\n" << r.output;
    EXPECT_FALSE(std::filesystem::exists(dir / "bad.png")) << c.json;
  }
  const auto missing =
      Rewire("plot --series " + Quote(dir / "none.json") + " --out " + Quote(dir / "x.png"));
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.output.find("series file " + dir / "none.json" + " does not exist"),
            std::string::npos)
      << missing.output;
}

}  // namespace
}  // namespace rewire
