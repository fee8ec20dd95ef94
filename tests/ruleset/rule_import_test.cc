// Importing TASO's rule collections end to end: converted rules go through the ordinary parser
// and verifier, and only verified rules are kept.

#include "ruleset/rule_import.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "graph/rules/rule.h"
#include "tests/graph/rules/taso_test_rules.h"

namespace rewire {
namespace {

TEST(TasoRuleImport, KeepsVerifiedRulesAndCountsEveryRefusalByReason) {
  auto r = ImportTasoRules(testing::taso_rules::SmallCollection(), "small.pb");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->total, 4);
  EXPECT_EQ(r->converted, 3);  // the max pool is refused before conversion
  EXPECT_EQ(r->verified, 2);   // x @ A + x @ B => x @ A is converted but wrong
  EXPECT_EQ(r->refused_by_reason,
            (std::map<std::string, int>{{"unsupported op", 1}, {"verification failed", 1}}));
  EXPECT_EQ(r->rules[3].reason, "verification failed");
  EXPECT_NE(r->rules[3].detail.find("differs"), std::string::npos) << r->rules[3].detail;

  auto kept = rules::ParseRules(r->rules_text, "taso.rules");
  ASSERT_TRUE(kept.ok()) << kept.status().message();
  ASSERT_EQ(kept->size(), 2u);
  EXPECT_EQ((*kept)[0].name, "taso_000");
  EXPECT_EQ((*kept)[1].name, "taso_001");
  for (const auto& rule : *kept) EXPECT_TRUE(VerifyRule(rule).passed) << rule.name;
  EXPECT_NE(r->rules_text.find("small.pb"), std::string::npos);
  EXPECT_NE(r->rejected_text.find("# taso_002 (TASO rule 2): unsupported op: pool2d_max"),
            std::string::npos)
      << r->rejected_text;
  EXPECT_NE(r->rejected_text.find("rule taso_003"), std::string::npos)
      << "a rule that failed verification keeps its text in the rejected file";
}

TEST(TasoRuleImport, AFileThatIsNotTasosIsOneErrorNamingIt) {
  const std::string path = ::testing::TempDir() + "/not_taso.pb";
  {
    std::ofstream f(path, std::ios::binary);
    f << "rule x\n";
  }
  auto r = ImportTasoRuleFile(path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find(path), std::string::npos) << r.status().message();
  std::remove(path.c_str());
  auto missing = ImportTasoRuleFile(path);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace rewire
