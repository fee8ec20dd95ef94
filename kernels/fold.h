#pragma once
// Folding of weight-only subgraphs: operators whose inputs all come from weights and constants
// (e.g. the Concat of two weight matrices a merge rule creates) are computed once, ahead of
// time, and replaced by a Weight holding the result - as TASO precomputes them - so that no
// cost is charged for them at inference time.

#include "graph/graph.h"
#include "graph/rewriter.h"

namespace rewire {

struct FoldResult {
  int folded_ops = 0;   // operators removed
  int new_weights = 0;  // weights added
};

/// Folds every maximal weight-only operator subgraph of `graph` through a Rewriter (the diff
/// goes to `listener`). Evaluation uses the reference executor. On error the graph is unchanged.
StatusOr<FoldResult> FoldWeightSubgraphs(Graph& graph, RewriteListener* listener = nullptr);

}  // namespace rewire
