#!/usr/bin/env bash
# Final cost of greedy and backtracking search with the hand rules and with hand + generated rules
# for the zoo models, as a markdown table for docs/results.md and docs/rules.md. The cost model is
# COST's options (default: the analytic model with the h100 profile; e.g. COST="--cost cpu
# --cost-cache F").
# Usage: scripts/rules_table.sh [OUT_DIR] [BUDGETS...]   (default budgets: 100 1000)
# Env: MODELS (subset), TIME_LIMIT (seconds per run, default 300), GREEDY=0 (reuse greedy
# reports already in OUT_DIR), REWIRE (binary), SETS (rule sets as NAME=PATHS, space-separated;
# default "hand=configs/rules gen=configs/rules,configs/rules/generated").
# A cell: final ms (speedup, wall seconds[, rewrites by generated rules on the path]).
set -euo pipefail
cd "$(dirname "$0")/.."
REWIRE=${REWIRE:-build/cli/rewire}
OUT=${1:-/tmp/rewire_rules_table}
shift || true
BUDGETS=${*:-100 1000}
MODELS=${MODELS:-"inceptionv3 resnext50 squeezenet bert vit dalle tt resnet50 nasrnn nasneta vgg19"}
TIME_LIMIT=${TIME_LIMIT:-300}
SETS=${SETS:-"hand=configs/rules gen=configs/rules,configs/rules/generated"}
read -r -a COST_ARGS <<< "${COST:---cost analytic --device h100}"
mkdir -p "$OUT"
declare -A RULES=()
NAMES=()
for s in $SETS; do
  RULES[${s%%=*}]=${s#*=}
  NAMES+=("${s%%=*}")
done
for m in $MODELS; do
  for r in "${NAMES[@]}"; do
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
python3 - "$OUT" "$MODELS" "${NAMES[*]}" $BUDGETS <<'PY'
import json, os, sys
out, models, sets, budgets = sys.argv[1], sys.argv[2].split(), sys.argv[3].split(), sys.argv[4:]
cols = [("greedy", "greedy")] + [(f"bt{b}", f"backtrack {b}") for b in budgets]
head = "| model | initial ms | " + " | ".join(
    f"{n} {s if s == 'hand' else 'hand+' + s}" for _, n in cols for s in sets) + " |"
print(head)
print("|" + " --- |" * (2 + len(sets) * len(cols)))
for m in models:
    row, init = [], None
    for key, _ in cols:
        for r in sets:
            p = os.path.join(out, f"{m}.{r}.{key}.json")
            if not os.path.exists(p):
                row.append("-"); continue
            d = json.load(open(p))
            init = d["initial_cost_ms"]
            gen = sum(1 for s in d["steps"] if s["rule"].startswith("gen"))
            extra = f", {gen} gen" if gen else ""
            row.append(f"{d['final_cost_ms']:.4f} ({d['speedup']:.2f}x, {d['seconds']:.0f} s{extra})")
    print(f"| {m} | {init:.4f} | " + " | ".join(row) + " |")
PY
