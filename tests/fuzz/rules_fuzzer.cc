// libFuzzer target for rule files (graph/rules/rule.h): any text must give rules or a Status with
// a message, never a crash, a hang or a sanitizer report. What a loaded rule drives is exercised
// too, without the executor: each check line's source graph is built (BuildRuleSource, as rule
// verification does), the rule's own match is found and applied there, and every rule is matched
// against two small zoo graphs (a transformer and a CNN) with a few of its matches applied.
// Whatever ApplyMatch accepts must leave a graph that passes Graph::Validate.
//
// Check lines whose shapes hold more than kMaxCheckElements elements are skipped: verification
// would allocate their weights, which says nothing about the parser and only exhausts memory.
//
// Build and run: docs/fuzzing.md.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "graph/models/zoo.h"
#include "graph/rules/candidates.h"
#include "graph/rules/check_graph.h"
#include "graph/rules/matcher.h"
#include "graph/rules/rule.h"

namespace {

constexpr int64_t kMaxCheckElements = int64_t{1} << 16;
constexpr size_t kAppliedPerGraph = 8;

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "%s: %s\n", what, detail.c_str());
  std::abort();
}

std::vector<rewire::Graph> ZooGraphs() {
  std::vector<rewire::Graph> out;
  rewire::ModelParams bert;
  bert.seq_len = 4;
  bert.hidden = 16;
  bert.heads = 2;
  bert.layers = 1;
  rewire::ModelParams cnn;
  cnn.image = 32;
  for (auto [name, params] : {std::pair{"bert", bert}, std::pair{"squeezenet", cnn}}) {
    auto g = rewire::BuildModel(name, params);
    if (!g.ok()) Fail("cannot build a zoo graph", g.status().message());
    out.push_back(std::move(g).value());
  }
  return out;
}

/// Elements of a shape, or -1 when they exceed kMaxCheckElements (or a dimension is negative).
int64_t BoundedElements(const rewire::Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || (d > 0 && n > kMaxCheckElements / d)) return -1;
    n *= d;
  }
  return n;
}

void ApplyChecked(const rewire::Graph& graph, const rewire::rules::Rule& rule,
                  const rewire::rules::Match& match, const char* where) {
  rewire::Graph rewritten = graph;
  auto diff = rewire::rules::ApplyMatch(rewritten, rule, match);
  if (!diff.ok()) {
    if (diff.status().message().empty()) Fail("ApplyMatch error without a message", rule.name);
    return;
  }
  if (auto valid = rewritten.Validate(); !valid.ok())
    Fail(where, "rule " + rule.name + " left an invalid graph: " + valid.message());
}

/// Builds each check line's source graph and applies the rule to it where it matches.
void ExerciseChecks(const rewire::rules::Rule& rule) {
  for (const rewire::rules::CheckCase& check : rule.checks) {
    bool small = true;
    for (const auto& [name, shape] : check.shapes) small = small && BoundedElements(shape) >= 0;
    if (!small) continue;
    auto source = rewire::BuildRuleSource(rule, check);
    if (!source.ok()) {
      if (source.status().message().empty()) Fail("BuildRuleSource error without a message", "");
      continue;
    }
    if (auto valid = source->Validate(); !valid.ok())
      Fail("BuildRuleSource built an invalid graph", rule.name + ": " + valid.message());
    const rewire::rules::MatchIndex index(*source);
    const auto matches = rewire::rules::FindMatches(*source, rule, 0, index);
    for (size_t i = 0; i < matches.size() && i < kAppliedPerGraph; ++i)
      ApplyChecked(*source, rule, matches[i], "applying a rule to its check graph");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<rewire::Graph> graphs = ZooGraphs();
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto rules = rewire::rules::ParseRules(text, "fuzz.rules");
  if (!rules.ok()) {
    if (rules.status().message().empty()) Fail("error without a message", "");
    return 0;
  }
  for (const auto& rule : *rules) ExerciseChecks(rule);
  for (const rewire::Graph& graph : graphs) {
    const auto set = rewire::rules::EnumerateCandidates(graph, *rules);
    for (size_t i = 0; i < set.candidates.size() && i < kAppliedPerGraph; ++i) {
      const rewire::rules::Match& m = set.candidates[i].match;
      ApplyChecked(graph, (*rules)[m.rule], m, "applying a rule to a zoo graph");
    }
  }
  return 0;
}
