"""``--platform rocm`` on the real 2.6.0 tree (Note [The ROCm side of #if] in resolve/conditions.py):
native/miopen's bodies are under ``#if AT_ROCM_ENABLED()``; on ROCm their MIOpen calls run, at
lines checked by hand in native/miopen/Conv_miopen.cpp and BatchNorm_miopen.cpp."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.realtree

MIOPEN = "aten/src/ATen/native/miopen/"


def _runs(ix, op, platform):
    return [(r.name, r.file, r.line) for r in ix.chain(op, keys=["CUDA"], platform=platform).runs]


@pytest.mark.parametrize("op, run", [
    ("miopen_convolution", ("miopenConvolutionForward", MIOPEN + "Conv_miopen.cpp", 734)),
    ("miopen_batch_norm", ("miopenBatchNormalizationForwardTraining", MIOPEN + "BatchNorm_miopen.cpp", 119)),
])
def test_rocm_runs_the_miopen_calls(real_index_26, op, run):
    assert run in _runs(real_index_26, op, "rocm")
    assert not any(n.startswith("miopen") for n, _, _ in _runs(real_index_26, op, "cuda"))  # as before


def test_cuda_is_the_default(real_index_26):
    assert real_index_26.chain("mm", keys=["CUDA"]) == real_index_26.chain("mm", keys=["CUDA"], platform="cuda")
