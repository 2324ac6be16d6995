#!/bin/bash
# usage: issue34_r25_blind_runner.sh SNAPDIR OUTDIR [SET...]  -- runs every set of SNAPDIR/bench/blind.py (or the
# SETs named), the bench's output discarded, each report cut to its aggregates (all, pairs_scored, timings; no
# splits, no misses) and deleted before anything reads it. SNAPDIR: `git archive <commit> | tar -x` plus a .venv link.
SNAP=$1; OUT=$2
export YULLU_HOME=${YULLU_HOME:-/tmp/blind25/home} YULLU_CONFIG=${YULLU_HOME:-/tmp/blind25/home}/config.toml
cd "$SNAP"
shift 2
SETS=${*:-$(.venv/bin/python -c "from bench.blind import BLIND; print(' '.join(sorted(BLIND)))")}
for X in $SETS; do
  .venv/bin/python -c 'import sys; from yullu_cli.main import main; sys.argv[0]="yullu"; main()' bench codebase \
     --data bench/data/codebase_$X.json --out "$OUT/raw_$X.json" >/dev/null 2>"$OUT/err_$X.txt"
  rc=$?
  .venv/bin/python - "$OUT/raw_$X.json" "$OUT/$X.json" $rc <<'PY'
import json, sys, os
raw, out, rc = sys.argv[1], sys.argv[2], int(sys.argv[3])
if rc or not os.path.exists(raw):
    json.dump({"rc": rc}, open(out, "w")); sys.exit()
r = json.load(open(raw))
keep = {k: r[k] for k in ("embedder", "all", "pairs_scored", "search_ms_by_kind", "load_s")}
json.dump(keep, open(out, "w"), indent=1)
os.remove(raw)
PY
  echo "$X rc=$rc $(date -u +%H:%M:%S)"
done
