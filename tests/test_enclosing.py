"""extract/enclosing.py: the branches around a call line, read from the text alone (Note
[Enclosing branches without a parse]). Each construct on a small snippet, then the lines of the
real CUDALoops.cuh and attention.cpp the runs block relies on."""
from __future__ import annotations

import pytest

from atenmap.extract.enclosing import TextBranches

from .conftest import fetch_real_tree

SNIPPET = b"""\
// a comment with { braces } and "quotes
namespace at::native {
template <typename T>
void launch(int vec_size, bool contiguous, int64_t N) {
  if (N == 0) return;                       // 5
  if (!contiguous) {
    legacy<<<1, 2>>>(N);                    // 7
    return;
  }
  switch (vec_size) {                       // 10
    case 4:
      vec_kernel<4><<<g, b>>>(N);           // 12
      break;
    case SDPBackend::flash_attention: {     // 14
      auto s = "}";                         // 15
      vec_kernel<2><<<g, b>>>(N);           // 16
      break;
    }
    default:
      if (N > 7) other<<<g, b>>>(N);        // 20
  }
  AT_DISPATCH_FLOATING_TYPES_AND2(kHalf, kBFloat16, t, "name", [&] {  // 22
    if (contiguous) {
      k<<<g, b>>>(N);                       // 24
    } else {
      k2<<<g, b>>>(N);                      // 26
    }
  });
#if defined(USE_ROCM)
  { 
#endif
  tail<<<g, b>>>(N);                        // 32
}
}  // namespace at::native
"""


def around(line):
    return [(e.kind, e.text) for e in TextBranches(SNIPPET).around(line)]


def test_if_return_and_early_returns():
    assert around(7) == [("if", "if (!contiguous)"), ("return", "after if (N == 0) return")]


def test_switch_and_its_case():
    assert around(12)[:2] == [("case", "case 4:"), ("switch", "switch (vec_size)")]
    assert ("return", "after if (!contiguous) return") in around(12)
    # a case with its own block, a qualified label; a string holding a brace does not count
    assert around(16)[:2] == [("case", "case SDPBackend::flash_attention:"), ("switch", "switch (vec_size)")]


def test_single_statement_if_and_default():
    assert around(20)[:3] == [("if", "if (N > 7)"), ("case", "default:"), ("switch", "switch (vec_size)")]


def test_dispatch_macro_and_else():
    got = TextBranches(SNIPPET).around(26)
    assert [(e.kind, e.text) for e in got][:2] == [("else", "else of if (contiguous)"),
                                                   ("dispatch", "AT_DISPATCH_FLOATING_TYPES_AND2")]
    assert got[1].args[:3] == ("kHalf", "kBFloat16", "t") and got[1].args[-1] == "…" and got[1].line == 22
    assert around(24)[0] == ("if", "if (contiguous)")


def test_preprocessor_lines_are_not_code_and_the_walk_stops_at_the_function():
    # the "{" under #if defined(USE_ROCM) is masked; the walk never leaves launch()
    assert around(32) == [("return", "after if (!contiguous) return"), ("return", "after if (N == 0) return")]
    assert around(1) == [] and around(999) == []


@pytest.mark.realtree
def test_real_cuda_loops_and_sdpa():
    root = fetch_real_tree("2.6.0")
    loops = TextBranches((root / "aten/src/ATen/native/cuda/CUDALoops.cuh").read_bytes())
    assert [(e.kind, e.text, e.line) for e in loops.around(158)] == [("case", "case 4:", 157),
                                                                      ("switch", "switch (vec_size)", 156)]
    assert [e.text for e in loops.around(172)] == ["case 1:", "switch (vec_size)"]
    assert [e.text for e in loops.around(230)] == ["after if (N == 0) return"]
    sdpa = TextBranches((root / "aten/src/ATen/native/transformers/attention.cpp").read_bytes())
    assert [e.text for e in sdpa.around(731)] == ["if (query_device_type == DeviceType::CUDA)",
                                                  "case SDPBackend::flash_attention:", "switch (backend)"]
    blas = TextBranches((root / "aten/src/ATen/native/cuda/Blas.cpp").read_bytes())
    assert [e.text for e in blas.around(461)][:2] == ["AT_DISPATCH_FLOATING_AND_COMPLEX_TYPES_AND2",
                                                      "else of if (useLtInterface)"]


def test_else_after_a_preprocessor_region_keeps_both_ifs():
    """``} #ifdef USE_ROCM else if (b) {…} #endif else {…}``: the else follows ``if (b)`` when the
    region is compiled, else ``if (a)`` before it (resolve/runs.py picks by build)."""
    src = b"""\
void f() {
  if (a) {
    x();
  }
#ifdef USE_ROCM
  else if (b) {
    y();
  }
#endif
  else {
    z();
  }
}
"""
    got, before = TextBranches(src).around(11)
    assert (got.kind, got.text, got.cond, got.other) == ("else", "else of if (b)", "defined(USE_ROCM)", "else of if (a)")
    # Note [An else-if chain's earlier tests]: the chain goes on to if (a), in the region's builds only
    # (the others have it as ``other``), at the line of the else that follows if (a)'s block
    assert (before.kind, before.text, before.line, before.cond, before.other) == (
        "else", "else of if (a)", 6, "defined(USE_ROCM)", "")
    plain = src.replace(b"#ifdef USE_ROCM\n", b"\n").replace(b"#endif\n", b"\n")  # the same lines, no region
    assert TextBranches(plain).around(11) == [got.__class__("else", "else of if (b)", 10),
                                              got.__class__("else", "else of if (a)", 6)]


def test_an_else_if_chain_keeps_its_earlier_tests():
    """Note [An else-if chain's earlier tests]: a call in ``else if (c) {`` holds under ``if (c)``
    and the ``else of`` each test before it, innermost first; one in the last ``else {`` under every
    test's ``else of``. A chain in an else's block stops at its own first if."""
    src = b"""\
void f() {
  if (a) {
    w();
  } else if (b) {
    x();
  } else if (c) {
    y();
  } else {
    if (d) {
      u();
    } else if (e) {
      v();
    }
  }
}
"""
    tb = TextBranches(src)
    text = lambda n: [(e.kind, e.text, e.line) for e in tb.around(n)]  # noqa: E731
    assert text(5) == [("if", "if (b)", 4), ("else", "else of if (a)", 4)]
    assert text(7) == [("if", "if (c)", 6), ("else", "else of if (b)", 6), ("else", "else of if (a)", 4)]
    assert text(12) == [("if", "if (e)", 11), ("else", "else of if (d)", 11),
                        ("else", "else of if (c)", 8), ("else", "else of if (b)", 6), ("else", "else of if (a)", 4)]


def test_a_return_nested_in_the_block_is_no_early_return():
    # as branches.scm's (compound_statement (return_statement)): index_put's
    # `if (!accumulate) { auto d = ...; if (ok) { return ...; } }` falls through when !ok, and a
    # `try { ...; return; } catch (...) {}` falls through on the catch
    src = b"""\
void f(bool accumulate, bool ok, bool search) {
  if (!accumulate) {
    auto d = g();
    if (ok) {
      return h(d);
    }
  }
  if (search) {
    try {
      run();
      return;
    } catch (E& e) {
    }
  }
  if (accumulate) {
    sort();
    return;
  }
  k<<<1, 1>>>();                            // 19
}
"""
    assert [(e.kind, e.text) for e in TextBranches(src).around(19)] == [("return", "after if (accumulate) return")]


LAMBDAS = b"""\
static void factor(const Tensor& input, bool pivots) {
  auto batch = input.size(0);
  const auto via_magma = [batch](const Tensor& input) {   // 3
    if (batch == 1) {
      looped_magma(input);                                  // 5
    } else {
      batched_magma(input);                                 // 7
    }
  };
  auto& unused = [](int) { never(); };                      // 10
  if (backend == LinalgBackend::Magma) {
    via_magma(input);                                       // 12
  } else {
#ifdef USE_LINALG_SOLVER
    solver(input);                                          // 15
#else
    via_magma(input);                                       // 17
#endif
  }
  obj.via_magma(input);                                     // 20
}
"""


def test_a_local_lambda_reads_at_each_use():
    """Note [A local lambda runs where it is used]: the body's branches, then one way per use; a
    member of the same name is no use; the definition's own place is not read."""
    tb = TextBranches(LAMBDAS)
    ways = tb.around_ways(5)
    assert [[(e.kind, e.text) for e in w] for w in ways] == [
        [("if", "if (batch == 1)"), ("if", "if (backend == LinalgBackend::Magma)")],
        [("if", "if (batch == 1)"), ("#if", "!(defined(USE_LINALG_SOLVER))"),
         ("else", "else of if (backend == LinalgBackend::Magma)")]]
    assert [line for line, _w in tb.ways(5)] == [12, 17]  # where each way enters the function
    assert [e.text for e in tb.around(5)] == ["if (batch == 1)"]  # around itself: as before
    assert tb.first_use(7) == 12 and tb.first_use(15) is None
    assert [[e.text for e in w] for w in tb.around_ways(15)] == [["else of if (backend == LinalgBackend::Magma)"]]
    # a lambda never used by name afterwards reads from its definition, as before
    assert tb.around_ways(10) == [tb.around(10)] and tb.first_use(10) is None


def test_not_built_reads_headers_defines():
    from atenmap.resolve.conditions import not_built

    assert not_built("!(defined(USE_LINALG_SOLVER))") and not not_built("defined(USE_LINALG_SOLVER)")
    assert not_built("defined(USE_ROCM)") and not not_built("defined(USE_ROCM)", "rocm")
    assert not_built("!AT_CUDNN_ENABLED()") and not not_built("AT_MAGMA_ENABLED()")


SCOPED = b"""\
Tensor soft(const Tensor& x, bool c) {
  auto result = [&]() {
    return at::g(x);                                        // 3
  }();
  if (c) {
    h(result);                                              // 6
  }
  return result;
}
void two(bool c) {
  if (c) {
    auto k = [&](int a) {
      at::g(a);                                             // 13
    };
    k(1);                                                   // 15
  }
  if (d) { k(2); }                                          // 17
}
void other(bool d) {
  if (d) { k(3); }                                          // 20
}
"""


def test_a_lambda_called_where_written_and_one_out_of_scope():
    """Note [A local lambda runs where it is used]: ``auto r = [&]() {…}();`` runs where it is
    written (``r`` is its result); a name past the block that declares the lambda is not its use."""
    tb = TextBranches(SCOPED)
    assert tb.first_use(3) is None and tb.around_ways(3) == [tb.around(3)]
    assert [line for line, _w in tb.ways(13)] == [15]
    assert [e.text for e in tb.around_ways(13)[0]] == ["if (c)"]


PASSED = b"""\
void conj(TensorIteratorBase& iter) {
  auto conj_chalf = [&] {
    jitted_gpu_kernel(iter);                                // 3
  };
  AT_DISPATCH_SWITCH(iter.common_dtype(), "conj_cuda",
    AT_DISPATCH_CASE_COMPLEX_TYPES([&] {
      gpu_kernel(iter);                                     // 7
    })
    AT_DISPATCH_CASE(kComplexHalf, conj_chalf)              // 9
  );
}
"""


def test_a_lambda_handed_to_a_call_reads_inside_it():
    """Note [A local lambda runs where it is used]: a lambda handed to ``AT_DISPATCH_CASE`` on its
    line is read inside that call, as an inline lambda would be (UnaryComplexKernels.cu's conj_chalf)."""
    tb = TextBranches(PASSED)
    assert [line for line, _w in tb.ways(3)] == [9]
    assert [(e.kind, e.text) for e in tb.around_ways(3)[0]] == [("dispatch", "AT_DISPATCH_CASE"),
                                                                ("dispatch", "AT_DISPATCH_SWITCH")]


LABELLED = b"""\
void pick(const Tensor& x, Backend b) {
  auto via_cusolver = [&](const Tensor& a) {
    cusolver_call(a);                                       // 3
  };
  switch (b) {
    case Backend::Magma:
      magma_call(x);
      break;
    case Backend::Cusolver:
    default:
      via_cusolver(x);                                      // 11
  }
  if (x.dim() > 2) { other(x).via_cusolver(x); ns::via_cusolver(x); p->via_cusolver(x); }
}
"""


def test_a_use_after_a_case_label_is_a_use():
    """Note [A local lambda runs where it is used]: a use after ``default:`` is one (its ``:`` is no
    qualifier's); ``.name``, ``::name`` and ``->name`` are none."""
    tb = TextBranches(LABELLED)
    assert [line for line, _w in tb.ways(3)] == [11]
    assert [(e.kind, e.text) for e in tb.around_ways(3)[0]] == [("case", "case Backend::Cusolver:"),
                                                                ("switch", "switch (b)")]


SIDES = b"""\
void sides(bool a, bool b, bool c) {
  if (a) {
    fa();
  }
#ifdef X
  else if (b) {
    fb();
  }
#else
  else if (c) {
    fc();                                                   // 11
  }
#endif
  else {
    fz();                                                   // 15
  }
}
"""


def test_an_else_if_on_the_other_side_of_an_else_directive():
    """Note [An else-if chain's earlier tests]: ``#else else if (c)`` follows the ``if`` before the
    region, not the block on the ``#ifdef`` side, which that build does not compile."""
    tb = TextBranches(SIDES)
    assert [(e.text, e.cond, e.other) for e in tb.around(11)] == [("if (c)", "", ""), ("else of if (a)", "", "")]
    assert [(e.text, e.cond) for e in tb.around(15)][1] == ("else of if (a)", "!(defined(X))")


ONE_LINE = b"""\
void f(bool a, bool b, bool c) {
  auto outer = [&]() {
    if (a) { call(); }                                      // 3
  };
  auto other = [&]() { if (c) { outer(); } };              // 5
  if (b) { outer(); } else { other(); }                     // 6
}
"""


def test_a_use_reads_the_blocks_opened_before_it_on_its_line():
    """Note [A local lambda runs where it is used]: a use is read from its own statement, so the
    blocks a line opens before it hold (``{ if (c) { outer(); } }``), and a lambda used in another
    one-line lambda follows that one's uses."""
    tb = TextBranches(ONE_LINE)
    assert [(n, [e.text for e in w]) for n, w in tb.ways(3)] == [
        (6, ["if (a)", "if (c)", "else of if (b)"]), (6, ["if (a)", "if (b)"])]
