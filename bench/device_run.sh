#!/usr/bin/env bash
# One run on the GPU machine of the `device` tool (torch with CUDA, Python 3.12): installs the
# carried wheels, unpacks the carried PyTorch 2.6.0 source, indexes it, then
#   - profiles bench/trace_cuda_demo.py's workload and answers every kernel of the trace,
#   - runs `atenmap trace --key CUDA` on the same script,
#   - runs bench/bench_trace.py --device cuda (ATENMAP_DEVICE_BENCH=0 skips it).
# Outputs under $OUT (see docs/trace.md and docs/kernels.md for what was kept).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD/src ATENMAP_CACHE=/tmp/amc PYTHONUNBUFFERED=1
mkdir -p /tmp/pt && tar -xJf .ptsrc/pytorch_2.6.0+dfsg.orig.tar.xz -C /tmp/pt || exit 1
S=$(ls -d /tmp/pt/*)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c "import torch; print('torch', torch.__version__, torch.version.git_version)"
python3 -m atenmap index -s "$S" 2>&1 | tail -4
python3 bench/profile_demo.py "$OUT"
python3 -m atenmap kernel -s "$S" --from-trace "$OUT/profile.json" > "$OUT/kernels.txt" 2>&1; echo "kernel rc=$?"
python3 -m atenmap kernel -s "$S" --json --from-trace "$OUT/profile.json" > "$OUT/kernels.json" 2>&1
python3 -m atenmap trace --key CUDA -s "$S" --json "$OUT/trace.json" --chrome "$OUT/chrome.json" -- bench/trace_cuda_demo.py > "$OUT/trace.txt" 2>&1; echo "trace rc=$?"
head -c 3000 "$OUT/trace.txt"
# The trace's overhead on the GPU machine (steady state, first call, --chrome size against the profiler's).
if [ "${ATENMAP_DEVICE_BENCH:-1}" = 1 ]; then
  python3 bench/bench_trace.py --device cuda --json "$OUT/bench_trace_cuda.json" --chrome "$S" > "$OUT/bench_trace_cuda.txt" 2>&1
  echo "bench_trace rc=$?"; tail -25 "$OUT/bench_trace_cuda.txt"
fi
