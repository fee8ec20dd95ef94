#include "graph/toml_text.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace rewire {
namespace {

// U+00E9 (e acute) and U+00A7 (section sign) lie in U+00A1..U+0499, where Debian's toml++ 3.3
// reaches __builtin_unreachable if it meets them where whitespace may stand (found by
// tests/fuzz/config_fuzzer.cc: UBSan "execution reached an unreachable program point").
constexpr const char* kE = "\xc3\xa9";
constexpr const char* kSection = "\xc2\xa7";

std::string ErrorOf(const std::string& text) {
  const Status s = CheckTomlText(text, "t.toml");
  if (s.ok()) return "";
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  return s.message();
}

TEST(TomlText, RejectsTheCharactersOutsideStringsAndComments) {
  EXPECT_EQ(ErrorOf(std::string("[run]\ndir = ") + kE + "\n"),
            "t.toml:2:7: character U+00E9 outside a string or comment: TOML allows it in quoted "
            "strings only");
  for (const std::string& text :
       {std::string("[") + kE + "]", std::string("a.") + kE + " = 1",
        "a = [1, " + std::string(kE) + "]", "a = { b = " + std::string(kE) + " }",
        "a = 1 " + std::string(kE), std::string(kE) + " = 1", "a = \"x\" " + std::string(kE),
        "a = '''x'''" + std::string(kE),
        // A quote inside a bare value starts no string: toml++ scans on through it (found by the
        // config fuzzer after the first version of this check).
        "v = 6nv.{name=\"b" + std::string(kE) + "\"", "a = 1979-05-27 " + std::string(kE),
        "a = [1, 2\"" + std::string(kE) + "\"]", "a = { b = x'" + std::string(kE) + "' }",
        // The library's other blocks without an answer: U+2C5E, U+3042 (hiragana), U+FCBF.
        std::string("a = \xe2\xb1\x9e"), std::string("a = \xe3\x81\x82"),
        std::string("a = \xef\xb2\xbf")}) {
    EXPECT_NE(ErrorOf(text), "") << text;
  }
}

TEST(TomlText, RejectsTheFirstCharacterAfterALineEndingBackslash) {
  // marzer/tomlplusplus#190: valid TOML, but toml++ 3.3 cannot read it.
  EXPECT_EQ(ErrorOf(std::string("s = \"\"\"\\  \n\n  ") + kSection + "x\"\"\"\n"),
            "t.toml:3:3: character U+00A7 right after a line-ending backslash: write it as a \\u "
            "escape there (this TOML library cannot read it)");
  EXPECT_EQ(ErrorOf(std::string("s = \"\"\"\\\n  x ") + kSection + "\"\"\"\n"), "");
}

TEST(TomlText, AcceptsAnyTextInStringsKeysAndComments) {
  const std::string e = kE;
  for (const std::string& text :
       {"a = \"" + e + "\"", "# " + e + "\na = 1", "a = 1 # " + e, "\"k" + e + "\" = 1",
        "s = '" + e + "'", "s = '''\n" + e + "\n'''", "s = \"\"\"" + e + "\n" + e + "\"\"\"",
        "s = \"\\\"" + e + "\"", "s = \"\"\"x\"\"\"\"\"\nt = \"" + e + "\"",
        "s = '''x'''''\nt = '" + e + "'", "s = \"\\\\\"\nt = \"" + e + "\"",
        "a.\"" + e + "\".b = 1", "a = [\n  \"" + e + "\",\n  '" + e + "']",
        "a = { \"" + e + "\" = 1 }", "[\"" + e + "\"]\n[[\"" + e + "\"]]\n[a . \"" + e + "\"]",
        std::string("a = \xe4\xb8\xad"),  // U+4E2D: toml++ reports it as an error by itself
        std::string("a = \xe3\x80\x80"),  // U+3000, whitespace to toml++
        std::string("a = \xff")}) {       // not UTF-8: the parser's to report
    EXPECT_EQ(ErrorOf(text), "") << text;
  }
}

TEST(TomlText, EveryShippedTomlFilePasses) {
  int files = 0;
  for (const auto& e :
       std::filesystem::recursive_directory_iterator(std::string(REWIRE_SOURCE_DIR) + "/configs")) {
    if (e.path().extension() != ".toml") continue;
    std::ifstream in(e.path());
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_TRUE(CheckTomlText(text.str(), e.path().string()).ok()) << e.path();
    ++files;
  }
  EXPECT_GT(files, 10);
}

}  // namespace
}  // namespace rewire
