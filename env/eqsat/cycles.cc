#include "env/eqsat/cycles.h"

#include <algorithm>

#include "env/eqsat/extract.h"

namespace rewire::eqsat {
namespace {

/// One class on the DFS path: which usable e-node of it is being followed, and which operand.
struct Frame {
  ClassId cls;
  size_t node = 0;   // index into Nodes(cls)
  size_t child = 0;  // next operand of that e-node
};

/// For each e-node, whether it *anchors* its class: the e-nodes of extraction's own greedy choice
/// (extract.h) over the e-graph as it stands, an acyclic extraction through e-nodes extraction
/// accepts, which the input graph's e-nodes (or their congruent survivors) give every root. Cycle
/// filtering never blacklists an anchor, so extraction always has that solution left. Whatever
/// costs are set (none before the first extraction) serve: any greedy choice is acyclic.
std::vector<bool> Anchors(const EGraph& eg) {
  std::vector<bool> anchor(eg.node_bound(), false);
  const StatusOr<Choice> choice = GreedyChoice(eg, MakeBasis(eg), TreeCost::kPerConsumer);
  if (!choice.ok()) return anchor;  // not reached: the input's e-nodes stay extractable
  for (ENodeId n : *choice) {
    if (n != kNone) anchor[n] = true;
  }
  return anchor;
}

/// The e-node of the cycle to blacklist, never an anchor: the newest one whose class keeps
/// another usable e-node, else the newest. kNone when every e-node of the cycle is an anchor,
/// which anchors being acyclic rules out.
ENodeId Victim(const EGraph& eg, const std::vector<ENodeId>& cycle,
               const std::vector<bool>& anchor) {
  ENodeId best = kNone, newest = kNone;
  for (ENodeId n : cycle) {
    if (anchor[n]) continue;
    if (newest == kNone || n > newest) newest = n;
    const auto& members = eg.Nodes(eg.ClassOf(n));
    const size_t usable =
        std::count_if(members.begin(), members.end(), [&](ENodeId m) { return eg.Usable(m); });
    if (usable >= 2 && (best == kNone || n > best)) best = n;
  }
  return best != kNone ? best : newest;
}

/// One depth-first pass from the roots; every back edge found blacklists one e-node of its cycle.
size_t FilterPass(EGraph& eg, const std::vector<bool>& anchor) {
  enum : uint8_t { kWhite = 0, kGray = 1, kBlack = 2 };
  std::vector<uint8_t> color(eg.class_bound(), kWhite);
  size_t blacklisted = 0;
  std::vector<Frame> stack;
  for (const EGraph::Root& root : eg.roots()) {
    const ClassId r = eg.Find(root.cls);
    if (color[r] != kWhite || eg.WeightOnly(r)) continue;
    color[r] = kGray;
    stack.push_back({r});
    while (!stack.empty()) {
      Frame& f = stack.back();
      const auto& members = eg.Nodes(f.cls);
      if (f.node >= members.size()) {
        color[f.cls] = kBlack;
        stack.pop_back();
        continue;
      }
      const ENodeId n = members[f.node];
      if (!eg.Usable(n) || f.child >= eg.node(n).children.size()) {
        ++f.node;
        f.child = 0;
        continue;
      }
      const ClassId k = eg.Find(eg.node(n).children[f.child++]);
      if (eg.WeightOnly(k)) continue;  // extracted through weight-only e-nodes: never on a cycle
      if (color[k] == kWhite) {
        color[k] = kGray;
        stack.push_back({k});
      } else if (color[k] == kGray) {
        std::vector<ENodeId> cycle;
        size_t i = stack.size();
        while (i-- > 0) {
          cycle.push_back(eg.Nodes(stack[i].cls)[stack[i].node]);
          if (stack[i].cls == k) break;
        }
        const ENodeId victim = Victim(eg, cycle, anchor);
        if (victim == kNone) continue;  // not reached: anchors close no cycle
        eg.Blacklist(victim);
        ++blacklisted;
      }
    }
  }
  return blacklisted;
}

}  // namespace

size_t FilterCycles(EGraph& egraph) {
  const std::vector<bool> anchor = Anchors(egraph);
  size_t total = 0;
  for (;;) {
    const size_t n = FilterPass(egraph, anchor);
    total += n;
    if (n == 0) return total;
  }
}

ReachChecker::ReachChecker(const EGraph& eg) : eg_(eg) {
  // Levels by an iterative post-order over all classes; an operand still on the path (a cycle
  // not filtered yet) is ignored.
  const ClassId bound = eg.class_bound();
  level_.assign(bound, 0);
  seen_.assign(bound, 0);
  std::vector<uint8_t> state(bound, 0);  // 0 new, 1 on the path, 2 done
  std::vector<Frame> stack;
  for (ClassId c : eg.Classes()) {
    if (state[c] != 0) continue;
    state[c] = 1;
    stack.push_back({c});
    while (!stack.empty()) {
      Frame& f = stack.back();
      const auto& members = eg.Nodes(f.cls);
      if (f.node >= members.size()) {
        state[f.cls] = 2;
        const uint32_t lvl = level_[f.cls];
        stack.pop_back();
        if (!stack.empty()) {
          uint32_t& up = level_[stack.back().cls];
          up = std::max(up, lvl + 1);
        }
        continue;
      }
      const ENodeId n = members[f.node];
      if (!eg.Usable(n) || f.child >= eg.node(n).children.size()) {
        ++f.node;
        f.child = 0;
        continue;
      }
      const ClassId k = eg.Find(eg.node(n).children[f.child++]);
      if (state[k] == 0) {
        state[k] = 1;
        stack.push_back({k});
      } else if (state[k] == 2) {
        level_[f.cls] = std::max(level_[f.cls], level_[k] + 1);
      }
    }
  }
}

uint32_t ReachChecker::Level(ClassId c) const {
  return c < level_.size() ? level_[c] : std::numeric_limits<uint32_t>::max();
}

bool ReachChecker::Reaches(const std::vector<ClassId>& from, const std::vector<ClassId>& to) {
  if (seen_.size() < eg_.class_bound()) seen_.resize(eg_.class_bound(), 0);
  ++stamp_;
  std::vector<ClassId> targets;
  uint32_t min_level = std::numeric_limits<uint32_t>::max();
  for (ClassId t : to) {
    targets.push_back(eg_.Find(t));
    min_level = std::min(min_level, Level(targets.back()));
  }
  // A class newer than the levels may sit anywhere: no pruning then.
  for (ClassId t : targets) {
    if (t >= level_.size()) min_level = 0;
  }
  std::vector<ClassId> stack;
  for (ClassId f : from) {
    const ClassId c = eg_.Find(f);
    if (seen_[c] == stamp_) continue;
    seen_[c] = stamp_;
    stack.push_back(c);
  }
  while (!stack.empty()) {
    const ClassId c = stack.back();
    stack.pop_back();
    if (std::find(targets.begin(), targets.end(), c) != targets.end()) return true;
    if (c < level_.size() && level_[c] < min_level) continue;  // too low to reach a target
    if (eg_.WeightOnly(c)) continue;  // extracted through weight-only e-nodes only
    for (ENodeId n : eg_.Nodes(c)) {
      if (!eg_.Usable(n)) continue;
      for (ClassId ch : eg_.node(n).children) {
        const ClassId k = eg_.Find(ch);
        if (seen_[k] == stamp_) continue;
        seen_[k] = stamp_;
        stack.push_back(k);
      }
    }
  }
  return false;
}

}  // namespace rewire::eqsat
