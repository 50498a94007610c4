"""``--compile`` on the real PyTorch 2.6.0 tree (exact file:line of what Inductor does) and on
1.13.1 (no torch/_inductor: one note)."""
from __future__ import annotations

import pytest

from .conftest import _open_shared, fetch_real_tree

pytestmark = pytest.mark.realtree

LOW = "torch/_inductor/lowering.py"
DEC = "torch/_inductor/decomposition.py"
MM = "torch/_inductor/kernel/mm.py"

# op -> the step Inductor uses first (role, file, line, symbol), then other steps that must be there
EXPECTED = {
    "mm": [("decomposition", DEC, 306, "mm"), ("lowering", MM, 181, "tuned_mm"),
           ("template", MM, 58, "mm_template"), ("extern", MM, 133, "aten_mm")],
    "addmm": [("decomposition", DEC, 277, "addmm"), ("lowering", MM, 331, "tuned_addmm"),
              ("extern", MM, 135, "aten_addmm"), ("extern", MM, 177, "aten_bias_addmm")],
    "bmm": [("decomposition", DEC, 254, "bmm"), ("lowering", "torch/_inductor/kernel/bmm.py", 130, "tuned_bmm"),
            ("template", "torch/_inductor/kernel/bmm.py", 52, "bmm_template"),
            ("extern", "torch/_inductor/kernel/bmm.py", 123, "aten_bmm")],
    "convolution": [("lowering", "torch/_inductor/kernel/conv.py", 460, "convolution"),
                    ("template", "torch/_inductor/kernel/conv.py", 139, "conv2d_template"),
                    ("extern", "torch/_inductor/kernel/conv.py", 368, "aten_convolution")],
    "relu": [("lowering", LOW, 6002, "register_pointwise(aten.relu)"),
             ("decomposition", "torch/_refs/nn/functional/__init__.py", 257, "relu")],
    "cumsum": [("lowering", LOW, 5751, "cumsum"), ("fallback", LOW, 5743, "fallback_handler(aten.cumsum.default)")],
    "_softmax": [("decomposition", "torch/_decomp/decompositions.py", 1163, "_softmax"),
                 ("decomposition", DEC, 82, "Inductor's list (get_decompositions)")],
    "native_layer_norm": [("decomposition", "torch/_refs/__init__.py", 3239, "native_layer_norm"),
                          ("decomposition", DEC, 78, "Inductor's list (get_decompositions)")],
    "sort": [("lowering", LOW, 5977, "sort"), ("fallback", LOW, 2492, "make_fallback(aten.sort)")],
    "_scaled_dot_product_efficient_attention": [
        ("fallback", LOW, 2561, "make_fallback(aten._scaled_dot_product_efficient_attention.default, sdpa_constraint, warn…")],
}


@pytest.mark.parametrize("op", sorted(EXPECTED))
def test_compile_steps_exact(real_index_26, op):
    ans = real_index_26.compile(op, keys=["CUDA"])
    got = [(s.role.value, s.file, s.line, s.symbol) for top in ans.steps for s in top.walk()]
    assert got[0] == EXPECTED[op][0], ans.summary
    for want in EXPECTED[op][1:]:
        assert want in got


def test_fallback_carries_the_aten_chain(real_index_26):
    ans = real_index_26.compile("_scaled_dot_product_efficient_attention", keys=["CUDA"])
    fb = ans.steps[0]
    assert fb.detail.startswith("used") and ans.summary == "fallback to the ATen kernel (make_fallback)"
    natives = [s for s in fb.walk() if s.role == "native"]
    assert [(s.file, s.line) for s in natives][:1] == [("aten/src/ATen/native/transformers/cuda/attention.cu", 840)]


def test_summary_and_table_on_the_real_tree(real_index_26):
    assert real_index_26.compile("_softmax").summary == "decomposed (Inductor's decomposition list)"
    assert real_index_26.compile("mm").summary.startswith("decomposed (Inductor's own decomposition); lowered (tuned_mm)")
    # an op with neither lowering nor decomposition: graph.py's implicit fallback, with its chain
    ans = real_index_26.compile("_fft_c2c")
    top = ans.steps[0]
    assert (top.role.value, top.file) == ("fallback", "torch/_inductor/graph.py") and top.children


def test_no_inductor_in_1_13_1(tmp_path_factory):
    ix = _open_shared(tmp_path_factory.mktemp("compile-113"), fetch_real_tree("1.13.1"))
    try:
        ans = ix.compile("mm")
    finally:
        ix.close()
    assert ans.steps == () and ans.note.startswith("no torch/_inductor in ")
