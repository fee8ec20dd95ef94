#include "ruleset/rule_verify.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

namespace rewire {
namespace {

rules::Rule ParseOne(const std::string& text) {
  auto r = rules::ParseRules(text, "t.rules");
  EXPECT_TRUE(r.ok()) << r.status().message();
  return std::move(r->at(0));
}

std::string FuseRule(const std::string& op, const std::string& act) {
  return R"(
rule fuse
  class fusion
  source
    c = Conv2D(x, w; activation="none")
    y = )" +
         op + R"((c)
  target
    z = Conv2D(x, w; *c, activation=")" +
         act + R"(")
  outputs y -> z
  check x=[1,4,7,7] w=[8,4,3,3] c.pads=[1,1,1,1]
  check x=[2,4,6,5] w=[4,1,3,3] c.group=4 c.strides=[2,2]
end
)";
}

TEST(RuleVerify, HardSigmoidRulesAreCheckedOnItsKernel) {
  const std::string rule = R"(
rule hard_sigmoid_unit_is_clip
  class algebra
  source
    y = HardSigmoid(x; alpha=ALPHA, beta=0.0)
  target
    z = Clip(x; min=0.0, max=1.0)
  outputs y -> z
  check x=[2,8]
  check x=[1,3,4,4]
end
)";
  auto with_alpha = [&](const std::string& alpha) {
    std::string text = rule;
    return text.replace(text.find("ALPHA"), 5, alpha);
  };
  EXPECT_TRUE(VerifyRule(ParseOne(with_alpha("1.0"))).passed);
  EXPECT_FALSE(VerifyRule(ParseOne(with_alpha("0.5"))).passed);
}

TEST(RuleVerify, CorrectRulePassesEveryCheckLine) {
  const RuleVerification v = VerifyRule(ParseOne(FuseRule("Sigmoid", "sigmoid")));
  EXPECT_TRUE(v.passed);
  ASSERT_EQ(v.checks.size(), 2u);
  for (const auto& c : v.checks) {
    EXPECT_TRUE(c.passed) << c.message;
    EXPECT_LE(c.max_rel_error, 1e-5);
  }
}

TEST(RuleVerify, PlantedWrongRuleIsCaught) {
  // Sigmoid is not Relu: the verifier must see different outputs.
  const RuleVerification v = VerifyRule(ParseOne(FuseRule("Sigmoid", "relu")));
  EXPECT_FALSE(v.passed);
  ASSERT_FALSE(v.checks.empty());
  EXPECT_FALSE(v.checks[0].passed);
  EXPECT_NE(v.checks[0].message.find("differs"), std::string::npos) << v.checks[0].message;
  EXPECT_GT(v.checks[0].max_rel_error, 1e-2);
}

TEST(RuleVerify, SubtlyWrongRuleIsCaught) {
  // Relu(x) + Relu(y) != Relu(x + y): equal on positive inputs only.
  const RuleVerification v = VerifyRule(ParseOne(R"(
rule wrong_relu_add
  class algebraic
  source
    a = Relu(x)
    b = Relu(y)
    s = Add(a, b)
  target
    t = Add(x, y)
    r = Relu(t)
  outputs s -> r
  check x=[4,5] y=[4,5]
  check x=[2,3,4] y=[3,4]
end
)"));
  EXPECT_FALSE(v.passed);
}

TEST(RuleVerify, SourceProducingNanIsAFailureNotAPass) {
  const RuleVerification v = VerifyRule(ParseOne(R"(
rule sqrt_twice
  class algebraic
  source
    a = Sqrt(x)
    b = Relu(a)
  target
    c = Sqrt(x)
  outputs b -> c
  check x=[4,5]
  check x=[3]
end
)"));
  EXPECT_FALSE(v.passed);
  EXPECT_NE(v.checks[0].message.find("NaN"), std::string::npos) << v.checks[0].message;
  // With positive inputs the same rule verifies.
  const RuleVerification ok = VerifyRule(ParseOne(R"(
rule sqrt_twice_positive
  class algebraic
  source
    a = Sqrt(x)
    b = Relu(a)
  target
    c = Sqrt(x)
  outputs b -> c
  check x=+[4,5]
  check x=+[3]
end
)"));
  EXPECT_TRUE(ok.passed) << (ok.checks.empty() ? "" : ok.checks[0].message);
}

TEST(RuleVerify, RuleThatCannotApplyToItsOwnSourceFails) {
  const RuleVerification v = VerifyRule(ParseOne(R"(
rule never
  class algebraic
  source
    a = Relu(x)
  where
    rank(x) == 7
  target
    b = Relu(x)
  outputs a -> b
  check x=[4,5]
  check x=[3]
end
)"));
  EXPECT_FALSE(v.passed);
  EXPECT_NE(v.checks[0].message.find("does not apply"), std::string::npos) << v.checks[0].message;
}

TEST(RuleVerify, LoadVerifiedRulesRefusesAFileWithAWrongRule) {
  const std::string path = ::testing::TempDir() + "/wrong.rules";
  {
    std::ofstream f(path);
    f << FuseRule("Sigmoid", "sigmoid") << "\n";
    std::string bad = FuseRule("Tanh", "relu");
    bad.replace(bad.find("rule fuse"), 9, "rule fuse_bad");
    f << bad;
  }
  auto r = LoadVerifiedRules(path);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("fuse_bad"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("wrong.rules:"), std::string::npos) << r.status().message();
  std::remove(path.c_str());
}

TEST(RuleVerify, AVerifiedRuleSetIsCachedByContentAndACorruptEntryIsRewritten) {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::path(::testing::TempDir()) / ("rule-cache-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string path = (dir / "good.rules").string();
  std::ofstream(path) << FuseRule("Sigmoid", "sigmoid");
  VerifyOptions o;
  o.cache_dir = (dir / "cache").string();
  auto entries = [&] {
    std::vector<fs::path> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir / "cache" / "verified-rules", ec))
      out.push_back(e.path());
    return out;
  };
  auto read = [](const fs::path& p) {
    std::ifstream f(p);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  };
  ASSERT_TRUE(LoadVerifiedRules(path, o).ok());
  ASSERT_EQ(entries().size(), 1u);
  const fs::path entry = entries()[0];
  const std::string text = read(entry);
  EXPECT_NE(text.find("rules 1"), std::string::npos) << text;
  // A second load hits the entry and leaves it as it is.
  ASSERT_TRUE(LoadVerifiedRules(path, o).ok());
  EXPECT_EQ(read(entry), text);
  // A corrupt (here: truncated) entry is ignored: the rules are verified again and it is rewritten.
  std::ofstream(entry, std::ios::trunc) << text.substr(0, text.size() / 2);
  ASSERT_TRUE(LoadVerifiedRules(path, o).ok());
  EXPECT_EQ(read(entry), text);
  // Other content has another key: a wrong rule added to the file is still refused, and never
  // cached.
  std::string bad = FuseRule("Tanh", "relu");
  bad.replace(bad.find("rule fuse"), 9, "rule fuse_bad");
  std::ofstream(path, std::ios::app) << "\n" << bad;
  EXPECT_FALSE(LoadVerifiedRules(path, o).ok());
  EXPECT_EQ(entries().size(), 1u);
  // Another verifier option is another key too.
  std::ofstream(path, std::ios::trunc) << FuseRule("Sigmoid", "sigmoid");
  o.trials = 3;
  ASSERT_TRUE(LoadVerifiedRules(path, o).ok());
  EXPECT_EQ(entries().size(), 2u);
  fs::remove_all(dir);
}

TEST(RuleVerify, ShippedRulesAllVerify) {
  VerifyOptions no_cache;
  no_cache.cache_dir = "none";  // verified here, not remembered from an earlier process
  auto r = LoadVerifiedRules(std::string(REWIRE_SOURCE_DIR) + "/configs/rules", no_cache);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_GE(r->size(), 3u);
}

}  // namespace
}  // namespace rewire
