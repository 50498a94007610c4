"""Bench: answer a profiler trace of a few hundred kernels from an existing index.

    .venv/bin/python bench/bench_kernels.py [--source TREE]

Builds a chrome trace in the shape torch.profiler writes (300 kernel events: the real names of the
issue, in several dtypes and launch counts), then times, in one process:
  baseline   json-loading the trace and demangling/parsing every name (no index work)
  cold       Index.kernels for every unique name on a freshly opened Index (caches empty)
  warm       the same again on the same Index (per-anchor caches filled)
and prints the ratios to the baseline. The index must exist (atenmap index) or is built first,
outside the timed region. Target from the issue: "well under a second".
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

NAMES = [
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<{t}>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<{t}>, std::array<char*, 3ul>)",
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<{t}, at::native::func_wrapper_t<{t}, at::native::sum_functor<{t}, {t}, {t}>::operator()(at::TensorIterator&)::{{lambda({t}, {t})#1}}>, unsigned int, {t}, 4, 4> >(at::native::ReduceOp<{t}, at::native::func_wrapper_t<{t}, at::native::sum_functor<{t}, {t}, {t}>::operator()(at::TensorIterator&)::{{lambda({t}, {t})#1}}>, unsigned int, {t}, 4, 4>)",
    "void (anonymous namespace)::softmax_warp_forward<{t}, {t}, {t}, 8, false, false>({t}*, {t} const*, int, int, int, bool const*, int, bool)",
    "void at::native::radixSortKVInPlace<-2, -1, 128, 32, {t}, long, unsigned int>(at::cuda::detail::TensorInfo<{t}, unsigned int>, unsigned int, unsigned int, unsigned int, at::cuda::detail::TensorInfo<long, unsigned int>, unsigned int, bool)",
    "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize64x64x8_stage3_warpsize1x4x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas",
    "Memcpy DtoD (Device -> Device)",
    "void at::native::unrolled_elementwise_kernel<at::native::exp_kernel_cuda(at::TensorIteratorBase&)::{{lambda()#2}}::operator()() const::{{lambda()#2}}::operator()() const::{{lambda({t})#1}}, std::array<char*, 2ul>, 4, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1> >(int)",
    "void at::native::(anonymous namespace)::cunn_SoftMaxBackward<4, {t}, {t}, {t}, at::native::(anonymous namespace)::SoftMaxBackwardEpilogue>({t}*, {t} const*, {t} const*, long)",
    "void at::native::vectorized_elementwise_kernel<4, at::native::MulFunctor<{t}>, std::array<char*, 3ul> >(int, at::native::MulFunctor<{t}>, std::array<char*, 3ul>)",
    "ampere_sgemm_128x64_nn",
]
DTYPES = ["float", "c10::Half", "c10::BFloat16", "double"]


def make_trace(path: Path, events: int = 300) -> int:
    names = [n.format(t=t) if "{t}" in n else n for n in NAMES for t in DTYPES]
    names = list(dict.fromkeys(names))
    ev = [{"ph": "X", "cat": "kernel", "name": names[i % len(names)], "ts": i, "dur": 3} for i in range(events)]
    path.write_text(json.dumps({"traceEvents": ev}))
    return len(names)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--source")
    a = ap.parse_args()
    source = a.source or subprocess.run([str(REPO / "scripts" / "fetch-pytorch-src"), "2.6.0"],
                                        capture_output=True, text=True, check=True).stdout.strip()
    sys.path.insert(0, str(REPO / "src"))
    from atenmap.api import Index
    from atenmap.resolve.kernelname import parse_kernel_name
    from atenmap.trace.chrome import read_trace

    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "trace.json"
        unique = make_trace(trace)
        Index.open(source).close()  # built outside the timed region if needed
        t0 = time.perf_counter()
        names = read_trace(trace)
        for n in dict.fromkeys(names):
            parse_kernel_name(n)
        base = time.perf_counter() - t0

        ix = Index.open(source, refresh=False)
        t0 = time.perf_counter()
        names = read_trace(trace)
        found = sum(m.found for m in ix.kernels(names))
        cold = time.perf_counter() - t0
        t0 = time.perf_counter()
        ix.kernels(read_trace(trace))
        warm = time.perf_counter() - t0
        ix.close()
    print(f"trace: {len(names)} kernel events, {unique} unique names, {found} resolved")
    print(f"baseline (read + parse names): {base * 1000:8.1f} ms")
    print(f"cold lookup of the whole trace: {cold * 1000:8.1f} ms  ({cold / base:.1f}x baseline)  "
          f"{'PASS' if cold < 1.0 else 'MISS'} (< 1 s)")
    print(f"warm lookup (same Index): {warm * 1000:8.1f} ms  ({warm / base:.1f}x baseline)")
    print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}")


if __name__ == "__main__":
    main()
