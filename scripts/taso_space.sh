#!/usr/bin/env bash
# Greedy and backtracking search in TASO's space (TASO's generated rules imported from its
# graph_subst.pb plus configs/rules/taso) on X-RLflow's graphs, analytic cost with the gtx1080
# profile: the table of docs/rules.md ("TASO's space on X-RLflow's graphs").
# Usage: scripts/taso_space.sh GRAPH_SUBST_PB [OUT_DIR]
# Env: MODELS (subset), BUDGETS (default "100 1000"), TIME_LIMIT (seconds per run, default 600),
# REWIRE (binary).
set -euo pipefail
cd "$(dirname "$0")/.."
PB=${1:?usage: scripts/taso_space.sh GRAPH_SUBST_PB [OUT_DIR]}
OUT=${2:-/tmp/rewire_taso_space}
REWIRE=${REWIRE:-build/cli/rewire}
MODELS=${MODELS:-"xrlflow-bert xrlflow-vit xrlflow-dalle xrlflow-tt xrlflow-resnext50 xrlflow-inceptionv3 xrlflow-squeezenet"}
BUDGETS=${BUDGETS:-"100 1000"}
TIME_LIMIT=${TIME_LIMIT:-600}
mkdir -p "$OUT"
"$REWIRE" rules import-taso "$PB" --out "$OUT/taso.rules" --rejected "$OUT/rejected.txt"
TASO_RULES="configs/rules/taso,$OUT/taso.rules"
COST=(--cost analytic --device gtx1080)
for m in $MODELS; do
  "$REWIRE" optimize --model "$m" --search greedy "${COST[@]}" --rules configs/rules \
    --time-limit "$TIME_LIMIT" -q --report "$OUT/$m.hand.greedy.json" > /dev/null
  "$REWIRE" optimize --model "$m" --search greedy "${COST[@]}" --rules "$TASO_RULES" \
    --time-limit "$TIME_LIMIT" -q --report "$OUT/$m.taso.greedy.json" > /dev/null
  for b in $BUDGETS; do
    "$REWIRE" optimize --model "$m" --search backtrack --alpha 1.05 --budget "$b" "${COST[@]}" \
      --rules "$TASO_RULES" --time-limit "$TIME_LIMIT" -q --report "$OUT/$m.taso.bt$b.json" \
      > /dev/null
  done
done
/usr/bin/python3 - "$OUT" "$BUDGETS" $MODELS <<'EOF'
import json, sys
out, budgets, models = sys.argv[1], sys.argv[2].split(), sys.argv[3:]
def load(m, tag):
    with open(f"{out}/{m}.{tag}.json") as f:
        return json.load(f)
cols = ["taso.greedy"] + [f"taso.bt{b}" for b in budgets]
head = ["model", "initial ms", "hand rules: greedy"] + ["TASO: greedy"] + \
       [f"TASO: backtrack {b}" for b in budgets] + ["backtracking beats greedy"]
print("| " + " | ".join(head) + " |")
print("|" + " --- |" * len(head))
for m in models:
    hand = load(m, "hand.greedy")
    runs = [load(m, c) for c in cols]
    cell = lambda r: (f"{r['final_cost_ms']:.4f} ms ({r['speedup']:.3f}x, {r['search_seconds']:.2f} s"
                      + (", time limit" if r["stop_reason"] == "time limit" else "") + ")")
    best_bt = min(r["final_cost_ms"] for r in runs[1:])
    greedy = runs[0]["final_cost_ms"]
    beats = (f"yes, {100 * (greedy - best_bt) / greedy:.2f}% lower" if best_bt < greedy * (1 - 1e-6)
             else "no")
    print(f"| {m} | {runs[0]['initial_cost_ms']:.4f} | {cell(hand)} | "
          + " | ".join(cell(r) for r in runs) + f" | {beats} |")
EOF
