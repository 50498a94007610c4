#!/usr/bin/env bash
# Issue 20 on the GPU machine of the `device` tool (torch with CUDA, Python 3.12; no tree needed):
#   - records the three workloads of bench/record_workloads.py (fixtures/trace/h200_*),
#   - answers each plain trace with the recorder's join (no index: the join runs where the tree is),
#   - runs bench/bench_trace.py --device cuda (loop cost, whole command and --chrome size, bundled index).
# Run from a folder holding this repo's src/ and bench/: outputs under $OUT.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1 ATENMAP_CACHE=/tmp/amc
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c "import sys, torch; print('python', sys.version.split()[0], 'torch', torch.__version__)"
mkdir -p /tmp/fx
python3 bench/record_workloads.py /tmp/fx 2>&1 | grep -v -e USDT -e "^$"; echo "record rc=$?"
tar -C /tmp/fx -cf "$OUT/fixtures.tar" . && ls -la /tmp/fx
python3 bench/bench_trace.py --device cuda --no-first --rounds ${ROUNDS:-7} --json "$OUT/bench_trace_cuda.json" --chrome bundled \
  > "$OUT/bench_trace_cuda.txt" 2>&1; echo "bench rc=$?"; tail -22 "$OUT/bench_trace_cuda.txt"
