// `rewire rules verify` on the generated rules and `rewire rules generate`'s errors: real binary.

#include <gtest/gtest.h>

#include "tests/cli/run_util.h"

namespace rewire {
namespace {

using testing::CountLines;
using testing::Quote;
using testing::Rewire;
using testing::TempDir;

TEST(CliRules, GeneratedRulesVerify) {
  auto r = Rewire("rules verify --rules " +
                  Quote(std::string(REWIRE_SOURCE_DIR) + "/configs/rules/generated"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find(" 0 failed"), std::string::npos) << r.output;
}

TEST(CliRules, TransformerGeneratedRulesVerify) {
  auto r = Rewire("rules verify --rules " +
                  Quote(std::string(REWIRE_SOURCE_DIR) + "/configs/rules/generated/transformer"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find(" 0 failed"), std::string::npos) << r.output;
}

TEST(CliRules, HandPlusGeneratedRulesLoadAsOneList) {
  const std::string dir = std::string(REWIRE_SOURCE_DIR) + "/configs/rules";
  auto r = Rewire("rules list --rules " + Quote(dir + "," + dir + "/generated"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("alg_add_commute"), std::string::npos);
  EXPECT_NE(r.output.find("gen_"), std::string::npos);
}

// Each bad input: non-zero exit and one line naming what to fix.
TEST(CliRules, GenerateBadInputsAreOneClearLine) {
  TempDir dir;
  struct Case {
    std::string args, expect;
  } cases[] = {
      {"--ops MatMul,Frobnicate --out " + Quote(dir / "a"), "Frobnicate"},
      {"--max-ops 0 --out " + Quote(dir / "b"), "--max-ops"},
      {"--max-ops 1 --ops Relu --out /proc/rewire_no_such_dir", "--out"},
      {"--domains heads,attn --out " + Quote(dir / "c"), "attn"},
      {"--domains heads --match-models bert,gpt9 --out " + Quote(dir / "d"), "gpt9"},
  };
  for (const Case& c : cases) {
    auto r = Rewire("rules generate " + c.args);
    EXPECT_NE(r.exit_code, 0) << c.args << ": " << r.output;
    EXPECT_NE(r.output.find("rewire: error:"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(c.expect), std::string::npos) << r.output;
    EXPECT_EQ(CountLines(r.output), 1) << r.output;
  }
}

TEST(CliRules, GenerateWritesLoadableFiles) {
  TempDir dir;
  auto r = Rewire("rules generate --max-ops 2 --ops Relu,Concat,Split --out " + Quote(dir / "g"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("enumerated graphs:"), std::string::npos) << r.output;
  auto v = Rewire("rules verify --rules " + Quote(dir / "g"));
  EXPECT_EQ(v.exit_code, 0) << v.output;
}

}  // namespace
}  // namespace rewire
