// `rewire rules import-taso` through the real binary, and TASO's hand rules (configs/rules/taso).

#include <gtest/gtest.h>

#include <fstream>

#include "tests/cli/run_util.h"
#include "tests/graph/rules/taso_test_rules.h"

namespace rewire {
namespace {

using testing::CountLines;
using testing::Quote;
using testing::Rewire;
using testing::TempDir;

TEST(CliRulesImport, WritesTheVerifiedRulesAndTheRefusedOnesWithReasons) {
  TempDir dir;
  const std::string pb = dir / "graph_subst.pb";
  {
    std::ofstream f(pb, std::ios::binary);
    f << testing::taso_rules::SmallCollection();
  }
  auto r = Rewire("rules import-taso " + Quote(pb) + " --out " + Quote(dir / "taso.rules") +
                  " --rejected " + Quote(dir / "rejected.txt"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* line :
       {"4 rules in", "converted:     3", "verified:      2  (kept)", "1  unsupported op",
        "taso_002: pool2d_max", "1  verification failed", "wrote"}) {
    EXPECT_NE(r.output.find(line), std::string::npos) << line << " not in\n" << r.output;
  }
  auto v = Rewire("rules verify --rules " + Quote(dir / "taso.rules"));
  EXPECT_EQ(v.exit_code, 0) << v.output;
  EXPECT_NE(v.output.find("2 rules verified, 0 failed"), std::string::npos) << v.output;
  std::ifstream rejected(dir / "rejected.txt");
  std::string text((std::istreambuf_iterator<char>(rejected)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("taso_003"), std::string::npos) << text;
}

TEST(CliRulesImport, AFileThatIsNotTasosIsOneClearLine) {
  TempDir dir;
  const std::string bad = dir / "rules.txt";
  {
    std::ofstream f(bad);
    f << "rule x\n  source\n";
  }
  for (const std::string& path : {bad, dir / "missing.pb"}) {
    auto r = Rewire("rules import-taso " + Quote(path));
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("rewire: error:"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("graph_subst.pb"), std::string::npos) << r.output;
    EXPECT_EQ(CountLines(r.output), 1) << r.output;
  }
}

TEST(CliRulesImport, TasosHandRulesVerifyAndLoadBesideTheShippedRules) {
  const std::string dir = std::string(REWIRE_SOURCE_DIR) + "/configs/rules";
  auto v = Rewire("rules verify --rules " + Quote(dir + "/taso"));
  ASSERT_EQ(v.exit_code, 0) << v.output;
  EXPECT_NE(v.output.find("6 rules verified, 0 failed"), std::string::npos) << v.output;
  auto l = Rewire("rules list --rules " + Quote(dir + "," + dir + "/taso"));
  EXPECT_EQ(l.exit_code, 0) << l.output;
}

}  // namespace
}  // namespace rewire
