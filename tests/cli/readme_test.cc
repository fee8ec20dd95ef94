// The command line's "Using it" block (docs/cli.md, where the README's tour points) is a test, so
// it cannot go stale: every `rewire ...` line of the first ```bash block under "## Using it" runs,
// in order, with the built binary in one fresh directory (where `configs/` points at the
// repository's configs), and must exit with 0. A renamed option, a removed command or a file one
// line expects from an earlier one fails here.

#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "tests/cli/run_util.h"

namespace rewire::testing {
namespace {

/// One command of the block: its text (continuation lines joined, comments removed) and the
/// README line it starts on.
struct ReadmeCommand {
  std::string text;
  int line = 0;
};

/// The commands of the first ```bash block after the "## Using it" heading; empty when there is
/// no such block.
std::vector<ReadmeCommand> UsingItCommands(const std::string& readme) {
  std::vector<ReadmeCommand> out;
  std::istringstream in(readme);
  std::string line;
  int number = 0;
  bool in_section = false, in_block = false, continued = false;
  while (std::getline(in, line)) {
    ++number;
    if (!in_section) {
      in_section = line == "## Using it";
      continue;
    }
    if (!in_block) {
      if (line.rfind("## ", 0) == 0) break;  // the next section: no block
      in_block = line == "```bash";
      continue;
    }
    if (line.rfind("```", 0) == 0) break;
    // A comment starts at " #" (the README's commands have no '#' of their own).
    if (const size_t hash = line.find(" #"); hash != std::string::npos) line.erase(hash);
    if (line.rfind("#", 0) == 0) line.clear();
    while (!line.empty() && line.back() == ' ') line.pop_back();
    const bool continues = !line.empty() && line.back() == '\\';
    if (continues) line.pop_back();
    if (continued) {
      out.back().text += " " + line;
    } else if (line.find_first_not_of(' ') != std::string::npos) {
      out.push_back({line, number});
    }
    continued = continues && !out.empty();
  }
  return out;
}

TEST(Readme, UsingItBlockParsesContinuationsAndComments) {
  const std::string readme =
      "# x\n## Using it\n\ntext\n```bash\nrewire models        # list\n\n"
      "rewire optimize --model a \\\n    --budget 4     # more\n                  # only a "
      "comment\n"
      "```\n```bash\nrewire not-this-block\n```\n";
  const std::vector<ReadmeCommand> commands = UsingItCommands(readme);
  ASSERT_EQ(commands.size(), 2u);
  EXPECT_EQ(commands[0].text, "rewire models");
  EXPECT_EQ(commands[0].line, 6);
  EXPECT_EQ(commands[1].text, "rewire optimize --model a      --budget 4");
  EXPECT_TRUE(UsingItCommands("## Using it\nno block\n## Next\n```bash\nrewire x\n```\n").empty());
}

/// ONNX Runtime (onnxruntime-node in tools/ort, from scripts/install-deps.sh) is present.
bool OrtInstalled() {
  return std::filesystem::exists(std::string(REWIRE_SOURCE_DIR) +
                                 "/tools/ort/node_modules/onnxruntime-node");
}

TEST(Readme, EveryCommandOfTheUsingItBlockRuns) {
  const std::vector<ReadmeCommand> commands =
      UsingItCommands(ReadFile(std::string(REWIRE_SOURCE_DIR) + "/docs/cli.md"));
  ASSERT_GE(commands.size(), 10u) << "docs/cli.md has no ```bash block under \"## Using it\"";
  TempDir dir;
  std::filesystem::create_directory_symlink(std::string(REWIRE_SOURCE_DIR) + "/configs",
                                            dir / "configs");
  for (const ReadmeCommand& c : commands) {
    ASSERT_EQ(c.text.rfind("rewire ", 0), 0u)
        << "docs/cli.md:" << c.line << ": the block should hold rewire commands only: " << c.text;
    if (c.text.find("--runtime ort") != std::string::npos && !OrtInstalled()) {
      std::printf("[ skipped  ] docs/cli.md:%d needs ONNX Runtime in tools/ort: %s\n", c.line,
                  c.text.c_str());
      continue;
    }
    const RunResult r =
        RunCommand("cd " + Quote(dir.path()) + " && " + Quote(REWIRE_BINARY) + c.text.substr(6));
    EXPECT_EQ(r.exit_code, 0) << "docs/cli.md:" << c.line << ": " << c.text << "\n" << r.output;
    if (r.exit_code != 0) break;  // later lines may need this one's files
  }
}

}  // namespace
}  // namespace rewire::testing
