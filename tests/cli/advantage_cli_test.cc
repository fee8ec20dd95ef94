// `rewire advantage collect|stats|train|eval` (cli/cmd_advantage.cc) as a user runs them: a
// dataset written, read back per model, the same for the same seed; a model trained on it and
// its ranking measured; errors that say what to fix.

#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

#include "tests/cli/run_util.h"

namespace rewire {
namespace {

using testing::Quote;
using testing::ReadFile;
using testing::Rewire;
using testing::RunResult;
using testing::TempDir;

TEST(AdvantageCli, CollectWritesADatasetThatStatsReadsBackPerModel) {
  TempDir tmp;
  const std::string out = tmp / "adv.jsonl";
  const RunResult r = Rewire(
      "advantage collect --model squeezenet --model bert:layers=2 "
      "--walks 2 --steps 4 --seed 3 --out " +
      Quote(out));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.output, m, std::regex("collected (\\d+) states, (\\d+) labels")))
      << r.output;
  // 2 models x 2 walks x (the input and up to 4 more states each).
  EXPECT_GE(std::stoi(m[1]), 4);
  EXPECT_LE(std::stoi(m[1]), 20);
  EXPECT_GT(std::stoi(m[2]), std::stoi(m[1]));
  const std::string text = ReadFile(out);
  EXPECT_EQ(text.rfind("{", 0), 0u) << text.substr(0, 200);
  EXPECT_NE(text.find("rewire-advantage"), std::string::npos) << text.substr(0, 300);
  EXPECT_FALSE(std::filesystem::exists(out + ".partial"));

  const RunResult stats = Rewire("advantage stats " + Quote(out));
  ASSERT_EQ(stats.exit_code, 0) << stats.output;
  EXPECT_NE(stats.output.find("rewire-advantage v1"), std::string::npos) << stats.output;
  EXPECT_NE(stats.output.find("squeezenet"), std::string::npos) << stats.output;
  EXPECT_NE(stats.output.find("bert(layers=2)"), std::string::npos) << stats.output;

  // The same seed walks the same states: the same file.
  const std::string again = tmp / "again.jsonl";
  ASSERT_EQ(Rewire("advantage collect --model squeezenet --model bert:layers=2 --walks 2 "
                   "--steps 4 --seed 3 --out " +
                   Quote(again))
                .exit_code,
            0);
  EXPECT_EQ(ReadFile(again), text);
}

TEST(AdvantageCli, ErrorsSayWhatToFix) {
  TempDir tmp;
  const RunResult tau =
      Rewire("advantage collect --model squeezenet --tau 0 --out " + Quote(tmp / "a.jsonl"));
  EXPECT_NE(tau.exit_code, 0);
  EXPECT_NE(tau.output.find("tau"), std::string::npos) << tau.output;
  const RunResult model =
      Rewire("advantage collect --model nosuchmodel --out " + Quote(tmp / "a.jsonl"));
  EXPECT_NE(model.exit_code, 0);
  EXPECT_NE(model.output.find("unknown model 'nosuchmodel'"), std::string::npos) << model.output;
  EXPECT_NE(model.output.find("squeezenet"), std::string::npos) << model.output;  // the zoo
  const RunResult dir = Rewire("advantage collect --model squeezenet --walks 1 --steps 1 --out " +
                               Quote(tmp / "no/such/dir/a.jsonl"));
  EXPECT_NE(dir.exit_code, 0);
  EXPECT_NE(dir.output.find("no/such/dir"), std::string::npos) << dir.output;
  testing::WriteFile(tmp / "bad.jsonl", "{\"format\":\"rewire-advantage\",\"version\":2}\n");
  const RunResult bad = Rewire("advantage stats " + Quote(tmp / "bad.jsonl"));
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.output.find("version 2"), std::string::npos) << bad.output;
  // The ablation switches take their listed values only, refused before any data is read.
  const RunResult transform = Rewire("advantage train --data " + Quote(tmp / "a.jsonl") +
                                     " --out " + Quote(tmp / "m.pt") + " --label-transform sqrt");
  EXPECT_NE(transform.exit_code, 0);
  EXPECT_NE(transform.output.find("--label-transform"), std::string::npos) << transform.output;
  EXPECT_NE(transform.output.find("sqrt"), std::string::npos) << transform.output;
  const RunResult sampling = Rewire("advantage train --data " + Quote(tmp / "a.jsonl") + " --out " +
                                    Quote(tmp / "m.pt") + " --sampling greedy");
  EXPECT_NE(sampling.exit_code, 0);
  EXPECT_NE(sampling.output.find("--sampling"), std::string::npos) << sampling.output;
  EXPECT_NE(sampling.output.find("greedy"), std::string::npos) << sampling.output;
}

TEST(AdvantageCli, TrainWritesAModelThatEvalMeasuresAndOtherRulesAreRefused) {
  TempDir tmp;
  const std::string data = tmp / "adv.jsonl", model = tmp / "adv.pt";
  ASSERT_EQ(Rewire("advantage collect --model squeezenet --walks 1 --steps 3 --seed 1 --out " +
                   Quote(data))
                .exit_code,
            0);
  const RunResult train = Rewire(
      "advantage train --data " + Quote(data) + " --out " + Quote(model) +
      " --epochs 2 --steps-per-epoch 2 --batch 8 --hidden 16 --layers 1 --heads 2 --threads 1");
  ASSERT_EQ(train.exit_code, 0) << train.output;
  EXPECT_NE(train.output.find("epoch 2/2: loss"), std::string::npos) << train.output;
  EXPECT_NE(train.output.find("trained on 4 states"), std::string::npos) << train.output;
  ASSERT_TRUE(std::filesystem::exists(model));

  const RunResult eval =
      Rewire("advantage eval --model " + Quote(model) + " --data " + Quote(data) + " --threads 1");
  ASSERT_EQ(eval.exit_code, 0) << eval.output;
  EXPECT_NE(eval.output.find("spearman"), std::string::npos) << eval.output;
  EXPECT_NE(eval.output.find("rand_spear"), std::string::npos) << eval.output;
  EXPECT_TRUE(std::regex_search(eval.output, std::regex("\nsqueezenet +\\d+ ")));
  EXPECT_TRUE(std::regex_search(eval.output, std::regex("\nall +\\d+ ")));
  EXPECT_NE(eval.output.find("label transform log, prioritised sampling"), std::string::npos)
      << eval.output;

  // The ablations: trained with them, named in the eval's header (read from the file).
  const std::string ablated = tmp / "ablated.pt";
  const RunResult train_ablated =
      Rewire("advantage train --data " + Quote(data) + " --out " + Quote(ablated) +
             " --epochs 1 --steps-per-epoch 2 --batch 8 --hidden 16 --layers 1 --heads 2 "
             "--threads 1 --label-transform none --sampling uniform");
  ASSERT_EQ(train_ablated.exit_code, 0) << train_ablated.output;
  EXPECT_NE(train_ablated.output.find("label transform none, uniform sampling"), std::string::npos)
      << train_ablated.output;
  const RunResult eval_ablated = Rewire("advantage eval --model " + Quote(ablated) + " --data " +
                                        Quote(data) + " --threads 1");
  ASSERT_EQ(eval_ablated.exit_code, 0) << eval_ablated.output;
  EXPECT_NE(eval_ablated.output.find("label transform none, uniform sampling"), std::string::npos)
      << eval_ablated.output;

  // The same dataset claiming other rules: train refuses it against the rules given, eval
  // against the model's.
  std::string text = ReadFile(data);
  const std::regex hash("\"rules_hash\":\"[0-9a-f]{16}\"");
  ASSERT_TRUE(std::regex_search(text, hash));
  text = std::regex_replace(text, hash, "\"rules_hash\":\"0000000000000001\"",
                            std::regex_constants::format_first_only);
  testing::WriteFile(tmp / "other.jsonl", text);
  const RunResult other_train = Rewire("advantage train --data " + Quote(tmp / "other.jsonl") +
                                       " --out " + Quote(tmp / "x.pt") + " --epochs 1");
  EXPECT_NE(other_train.exit_code, 0);
  EXPECT_NE(other_train.output.find("--rules"), std::string::npos) << other_train.output;
  const RunResult other_eval =
      Rewire("advantage eval --model " + Quote(model) + " --data " + Quote(tmp / "other.jsonl"));
  EXPECT_NE(other_eval.exit_code, 0);
  EXPECT_NE(other_eval.output.find("0000000000000001"), std::string::npos) << other_eval.output;
}

}  // namespace
}  // namespace rewire
