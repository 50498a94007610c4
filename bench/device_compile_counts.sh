#!/usr/bin/env bash
# Issue 35 on the GPU machine of the `device` tool (torch with CUDA, Python 3.12; the carried
# tree-sitter wheels in .whl): bench/compile_count_model.py compiled and run RUNS times under
# `atenmap trace --summary` (the bundled index joins), default mode and max-autotune; each Triton
# kernel's row must count RUNS launches, and no row may hold Inductor's autotuning.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD/src ATENMAP_CACHE=/tmp/amc PYTHONUNBUFFERED=1 RUNS=${RUNS:-4}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c "import torch; print('torch', torch.__version__)"
for mode in default max-autotune-no-cudagraphs; do
  export TORCHINDUCTOR_CACHE_DIR=/tmp/ind-$mode COMPILE_MODE=$([ $mode = default ] || echo $mode)
  python3 -m atenmap trace --summary --format csv --json "$OUT/trace-$mode.json" -- bench/compile_count_model.py \
    > "$OUT/summary-$mode.csv" 2> "$OUT/stderr-$mode.txt"; echo "$mode rc=$?"
  python3 -m atenmap trace --summary -- bench/compile_count_model.py > "$OUT/summary-$mode.txt" 2>&1
  python3 - "$OUT/summary-$mode.csv" "$RUNS" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
runs = int(sys.argv[2])
print(len(rows), "rows; columns:", list(rows[0]) if rows else None)
for r in rows:
    print({k: (v[:70] if isinstance(v, str) else v) for k, v in r.items()})
PY
done
