#!/usr/bin/env bash
# Issue 37's and issue 35's rows on the `device` tool's GPU machine (16 cores, Python 3.12, no
# registry): carries .whl/ (atenmap's cp312 wheels, docs/performance.md) and .dev-device/
# (universal-ctags' .deb with its libraries, pt26.tar.xz: aten/src/ATen, FunctionsManual.*,
# version.txt of PyTorch 2.6.0). Runs, each under $OUT:
#   - bench/bench_cores.py on all 16 cores (issue 37's rows, ratios to ctags in the same run),
#     once per SRC given (a space-separated list of src/ folders; this checkout's src by default);
#   - bench/bench_trace.py --ranks 8 pinned to two idle cores (taskset -c 2,3; issue 35's row).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
mkdir -p /tmp/ctags /tmp/pt
for f in .dev-device/*.deb; do dpkg -x "$f" /tmp/ctags; done
export LD_LIBRARY_PATH=/tmp/ctags/usr/lib/x86_64-linux-gnu
CTAGS=/tmp/ctags/usr/bin/ctags
"$CTAGS" --version | head -1 || exit 1
tar -xJf .dev-device/pt26.tar.xz -C /tmp/pt || exit 1
nproc; uptime
SRCS=${SRC:-$PWD/src}
args=(); for s in $SRCS; do args+=(--src "$s"); done
python3 bench/bench_cores.py --tree /tmp/pt/pytorch-2.6.0 --ctags "$CTAGS" "${args[@]}" --runs "${RUNS:-3}" \
  --json "$OUT/cores.json" 2>&1 | tee "$OUT/cores.txt"
if [ "${RANKS:-1}" = 1 ]; then
  BENCH_SRC=$PWD/src taskset -c 2,3 python3 bench/bench_trace.py --ranks 8 --rank-events "${RANK_EVENTS:-20000}" --jobs 2 \
    --json "$OUT/ranks.json" 2>&1 | tee "$OUT/ranks.txt"
  BENCH_SRC=$PWD/src taskset -c 2,3 python3 bench/bench_trace.py --ranks 8 --rank-events 100000 --jobs 2 \
    --json "$OUT/ranks1e5.json" 2>&1 | tee "$OUT/ranks1e5.txt"
fi
uptime
