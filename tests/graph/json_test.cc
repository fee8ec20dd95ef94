#include "graph/json.h"

#include <gtest/gtest.h>

#include <unistd.h>
#include <cmath>
#include <filesystem>
#include <fstream>

namespace rewire {
namespace {

TEST(Json, StringsAreEscapedAndReadBack) {
  const std::string tricky = std::string("a\"b\\c\nd\te") + '\x01';
  Json j;
  j["name"] = tricky;
  EXPECT_EQ(JsonText(j), "{\"name\":\"a\\\"b\\\\c\\nd\\te\\u0001\"}");
  auto back = ParseJsonObject(JsonText(j));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(JsonStringAt(*back, "name"), tricky);
}

TEST(Json, InvalidUtf8IsReplacedNotThrown) {
  Json j = {{"path", std::string("caf\xe9")}};
  auto back = ParseJsonObject(JsonText(j));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(JsonStringAt(*back, "path"), "caf\xef\xbf\xbd");
}

TEST(Json, DecimalsKeepTheirDigitsWholeNumbersAreIntegersNonFiniteIsNull) {
  EXPECT_EQ(JsonText(JsonDecimal(1.5)), "1.5");
  EXPECT_EQ(JsonText(JsonDecimal(1.0 / 3.0)), "0.333333333");
  EXPECT_EQ(JsonText(JsonDecimal(1.0 / 3.0, 8)), "0.33333333");
  EXPECT_EQ(JsonText(JsonDecimal(2.0)), "2");
  EXPECT_EQ(JsonText(JsonDecimal(-40.0)), "-40");
  EXPECT_EQ(JsonText(JsonDecimal(1e20)), "1e+20");
  EXPECT_EQ(JsonText(JsonDecimal(std::nan(""))), "null");
  EXPECT_EQ(JsonText(JsonDecimal(INFINITY)), "null");
  EXPECT_TRUE(JsonDecimal(3.0).is_number_integer());
}

TEST(Json, ObjectsKeepTheirKeyOrder) {
  Json j;
  j["zeta"] = 1;
  j["alpha"] = 2;
  j["mid"] = 3;
  EXPECT_EQ(JsonText(j), "{\"zeta\":1,\"alpha\":2,\"mid\":3}");
  auto back = ParseJson(R"({"b": 1, "a": 2})");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->begin().key(), "b");
}

TEST(Json, MalformedTextIsAnErrorSayingWhere) {
  // Malformed on purpose, so written by hand.
  const char* bad[] = {
      R"({"a": 1,})",
      R"({"a": 1 "b": 2})",
      R"({"a": 01})",
      R"({"a": "x})",
      R"({"a": tru})",
      R"({"a": 1} more)",
      "",
      R"({"a": NaN})",
      "[1, 2",
  };
  for (const char* text : bad) {
    auto r = ParseJson(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << text;
    EXPECT_NE(r.status().message().find("line 1, column"), std::string::npos)
        << r.status().message();
    EXPECT_EQ(r.status().message().find("json.exception"), std::string::npos)
        << r.status().message();
  }
  auto multi = ParseJson(R"({
  "a": 1,
  "b": }
)");
  ASSERT_FALSE(multi.ok());
  EXPECT_NE(multi.status().message().find("line 3"), std::string::npos) << multi.status().message();
}

TEST(Json, DuplicateKeysAreAnError) {
  auto r = ParseJson(R"({"update": 1, "nested": {"x": 1, "y": 2}, "update": 2})");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("duplicate key \"update\""), std::string::npos)
      << r.status().message();
  // The same key in sibling objects is fine.
  EXPECT_TRUE(ParseJson(R"([{"x": 1}, {"x": 2}])").ok());
  EXPECT_TRUE(ParseJson(R"({"a": {"x": 1}, "b": {"x": 2}})").ok());
}

TEST(Json, ObjectIsRequiredWhereOneIsExpected) {
  auto r = ParseJsonObject("[1, 2]");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("expected a JSON object, found array"), std::string::npos);
}

TEST(Json, TypedAccessorsNeverThrow) {
  auto j = ParseJsonObject(R"({"n": 2.5, "i": 3, "s": "x", "b": true, "z": null, "o": {"k": 1}})");
  ASSERT_TRUE(j.ok());
  EXPECT_EQ(JsonNumberAt(*j, "n"), 2.5);
  EXPECT_EQ(JsonNumberAt(*j, "i"), 3.0);
  EXPECT_EQ(JsonNumberAt(*j, "s"), std::nullopt);
  EXPECT_EQ(JsonNumberAt(*j, "z"), std::nullopt);
  EXPECT_EQ(JsonNumberAt(*j, "missing"), std::nullopt);
  EXPECT_EQ(JsonStringAt(*j, "s"), "x");
  EXPECT_EQ(JsonStringAt(*j, "n"), std::nullopt);
  EXPECT_EQ(JsonBoolAt(*j, "b"), true);
  EXPECT_EQ(JsonBoolAt(*j, "i"), std::nullopt);
  ASSERT_NE(JsonMember(*j, "o"), nullptr);
  EXPECT_EQ(JsonNumberAt(*JsonMember(*j, "o"), "k"), 1.0);
  EXPECT_EQ(JsonMember(Json::array({1}), "o"), nullptr);
  EXPECT_EQ(JsonNumberAt(Json(5), "k"), std::nullopt);
}

TEST(Json, FilesAreReadWithThePathInErrors) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("rewire-json-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string good = (dir / "good.json").string(), bad = (dir / "bad.json").string();
  std::ofstream(good) << JsonText(Json{{"a", {1, 2}}}) << "\n";
  const char* truncated = R"({"a": [1, 2})";
  std::ofstream(bad) << truncated << "\n";
  auto g = ReadJsonFile(good);
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ((*g)["a"].size(), 2u);
  auto b = ReadJsonFile(bad);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().message().rfind(bad + ": ", 0), 0u) << b.status().message();
  auto missing = ReadJsonFile((dir / "none.json").string());
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace rewire
