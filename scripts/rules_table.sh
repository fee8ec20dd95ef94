#!/usr/bin/env bash
# Final cost of greedy and backtracking search with the hand rules and with hand + generated rules
# for the zoo models, as a markdown table for docs/results.md. The cost model is COST's options
# (default: the analytic model with the h100 profile; e.g. COST="--cost cpu --cost-cache F").
# Usage: scripts/rules_table.sh [OUT_DIR] [BUDGETS...]   (default budgets: 100 1000)
# Env: MODELS (subset), TIME_LIMIT (seconds per run, default 300), GREEDY=0 (reuse greedy
# reports already in OUT_DIR), REWIRE (binary).
set -euo pipefail
cd "$(dirname "$0")/.."
REWIRE=${REWIRE:-build/launch/rewire}
OUT=${1:-/tmp/rewire_rules_table}
shift || true
BUDGETS=${*:-100 1000}
MODELS=${MODELS:-"inceptionv3 resnext50 squeezenet bert vit dalle tt resnet50 nasrnn nasneta vgg19"}
TIME_LIMIT=${TIME_LIMIT:-300}
read -r -a COST_ARGS <<< "${COST:---cost analytic --device h100}"
mkdir -p "$OUT"
declare -A RULES=([hand]=configs/rules [gen]=configs/rules,configs/rules/generated)
for m in $MODELS; do
  for r in hand gen; do
    if [[ ${GREEDY:-1} == 1 ]]; then
      "$REWIRE" optimize --model "$m" --search greedy "${COST_ARGS[@]}" --rules "${RULES[$r]}" \
        --time-limit "$TIME_LIMIT" -q --report "$OUT/$m.$r.greedy.json" > /dev/null
    fi
    for b in $BUDGETS; do
      "$REWIRE" optimize --model "$m" --search backtrack --budget "$b" --alpha 1.05 "${COST_ARGS[@]}" \
        --rules "${RULES[$r]}" --time-limit "$TIME_LIMIT" -q --report "$OUT/$m.$r.bt$b.json" > /dev/null
    done
  done
done
python3 - "$OUT" "$MODELS" $BUDGETS <<'PY'
import json, os, sys
out, models, budgets = sys.argv[1], sys.argv[2].split(), sys.argv[3:]
cols = [("greedy", "greedy")] + [(f"bt{b}", f"backtrack {b}") for b in budgets]
head = "| model | initial ms | " + " | ".join(f"{n} hand | {n} hand+gen" for _, n in cols) + " |"
print(head)
print("|" + " --- |" * (2 + 2 * len(cols)))
for m in models:
    row, init = [], None
    for key, _ in cols:
        for r in ("hand", "gen"):
            p = os.path.join(out, f"{m}.{r}.{key}.json")
            if not os.path.exists(p):
                row.append("-"); continue
            d = json.load(open(p))
            init = d["initial_cost_ms"]
            row.append(f"{d['final_cost_ms']:.4f} ({d['speedup']:.2f}x, {d['seconds']:.0f} s)")
    print(f"| {m} | {init:.4f} | " + " | ".join(row) + " |")
PY
