"""Issue 33 on the real 2.6.0 tree: what runs comes first, and what runs for one call (--dtype,
--shape, --example). Note [Deciding a branch] (resolve/decide.py), Note [Edge cases last] and
Note [Flags a condition names] (resolve/runs.py)."""
from __future__ import annotations

import json

import pytest

from atenmap.resolve.callfacts import CallFacts

from .conftest import cli_run

pytestmark = pytest.mark.realtree


def _first(ix, op: str, **kw):
    return [r for r in ix.chain(op, keys=["CUDA"], **kw).runs if r.key == "CUDA"]


def test_reduction_kernel_before_memset(real_index_26):
    runs = _first(real_index_26, "amax")
    assert runs[0].role == "launch" and runs[0].name == "reduce_kernel", runs[:2]
    names = [r.name for r in runs]
    assert "cudaMemsetAsync" in names  # kept, after the op's own work
    assert names.index("cudaMemsetAsync") > names.index("reduce_kernel")


def test_complex_only_jit_kernel_after_the_float_path(real_index_26):
    # sqrt: the jiterator kernel sits under `if (at::isComplexType(common_dtype))` at its launcher call
    runs = _first(real_index_26, "sqrt")
    jit = next(r for r in runs if r.name == "sqrt_kernel")
    before = runs[:runs.index(jit)]
    assert before and all(r.role == "launch" for r in before), runs  # the float path's launches first
    assert any(w.text.startswith("if (at::isComplexType") for w in jit.when), jit.when


def test_dtype_leaves_out_what_the_call_cannot_take(real_index_26):
    floats = _first(real_index_26, "sqrt", facts=CallFacts(dtype="Float"))
    assert "sqrt_kernel" not in [r.name for r in floats]
    assert all(r.decided in ("yes", "undecided") for r in floats)
    complexes = _first(real_index_26, "sqrt", facts=CallFacts(dtype="ComplexFloat"))
    jit = next(r for r in complexes if r.name == "sqrt_kernel")
    assert jit.decided == "yes"


def test_copy_conj_kernel_is_complex_only(real_index_26):
    # copy_'s `if (!same_conj)` reads `bool same_conj = ...is_conj() == ...is_conj();` (a flag)
    runs = _first(real_index_26, "copy_")
    conj = [i for i, r in enumerate(runs) if r.name == "conj_kernel"]
    kernel = [i for i, r in enumerate(runs) if r.name == "vectorized_elementwise_kernel"]
    assert conj and kernel
    # the default copy_ (same dtype, contiguous) takes the memcpy: it comes first, and the
    # kernels that run for other calls follow it, conj_kernel's condition on show
    assert runs[0].name != "conj_kernel" and conj[0] > 0
    assert any("same_conj" in r.text for r in runs[conj[0]].when)
    assert "conj_kernel" not in [r.name for r in _first(real_index_26, "copy_", facts=CallFacts(dtype="Float"))]


def test_cli_dtype_json_and_text(real_index_26, capsys, monkeypatch, shared_cache):
    monkeypatch.setenv("ATENMAP_CACHE", str(shared_cache))
    tree = str(real_index_26.source.root)
    code, out, _err = cli_run(capsys, "chain", "sqrt", "--key", "CUDA", "--dtype", "float32", "--json", "--source", tree)
    assert code == 0
    d = json.loads(out)
    assert d["given"] == ["dtype float32"]
    assert "sqrt_kernel" not in [r["name"] for r in d["runs"]]
    assert {r["decided"] for r in d["runs"]} <= {"yes", "undecided"}
    code, out, _err = cli_run(capsys, "sqrt", "--key", "CUDA", "--runs", "--dtype", "float32", "--source", tree)
    assert code == 0 and "for your call: dtype float32" in out and "not decided by the given arguments" in out


def test_cli_example(real_index_26, capsys, monkeypatch, shared_cache):
    monkeypatch.setenv("ATENMAP_CACHE", str(shared_cache))
    tree = str(real_index_26.source.root)
    code, out, _err = cli_run(capsys, "chain", "mm", "--key", "CUDA", "--json", "--source", tree,
                              "--example", "torch.mm(torch.randn(64, 64), torch.randn(64, 64))")
    assert code == 0 and json.loads(out)["given"] == ["call torch.mm", "shapes 64x64, 64x64"]


@pytest.mark.parametrize("args,words", [
    (("--dtype", "complex7"), "not a torch dtype"),
    (("--shape", "3xx"), "--shape"),
    (("--example", "1 +"), "not one valid Python expression"),
    (("--example", "torch.add(x, y)"), "not mm"),
    (("--example", "__import__('os')"), "dunder"),
])
def test_cli_bad_call_facts(real_index_26, capsys, monkeypatch, shared_cache, args, words):
    monkeypatch.setenv("ATENMAP_CACHE", str(shared_cache))
    code, out, err = cli_run(capsys, "chain", "mm", "--key", "CUDA", "--source", str(real_index_26.source.root), *args,
                             errors_only=True)
    assert code == 2 and words in err and len(err.strip().splitlines()) == 1


def test_why_keeps_the_deciding_condition(real_index_26):
    # SoftMax.cu:873 and :876 differ by `if (can_use_smem)`; --why's reasons come outermost first,
    # the runs block keeps the innermost (MAX_WHEN cuts the outer guards such as numel() > 0)
    for why in (False, True):
        runs = {r.line: r for r in real_index_26.chain("softmax.int", keys=["CUDA"], why=why).runs
                if r.file == "aten/src/ATen/native/cuda/SoftMax.cu"}
        assert runs[873].when[0].text == "if (can_use_smem)", (why, runs[873].when)
        assert runs[876].when[0].text == "else of if (can_use_smem)", (why, runs[876].when)


def test_composite_cross_entropy_runs_its_operators_before_fill(real_index_26):
    runs = _first(real_index_26, "cross_entropy_loss")
    via = [r.via[-1] if r.via else "" for r in runs]
    fill = via.index("fill_") if "fill_" in via else len(via)
    assert any(v.endswith("log_softmax") for v in via[:fill]) and any("nll_loss" in v for v in via[:fill]), via


def test_composite_default_key_runs_its_operators_on_cuda(real_index_26, capsys, monkeypatch, shared_cache):
    # linear has a CompositeImplicitAutograd kernel only: its default answer lists what its operators run
    ch = real_index_26.chain("linear", keys=["CompositeImplicitAutograd"])
    assert ch.runs and {r.key for r in ch.runs} == {"CUDA"} and all(r.via for r in ch.runs)
    assert ch.runs[0].role == "library" and ch.runs[0].via[-1] == "aten::addmm"
    monkeypatch.setenv("ATENMAP_CACHE", str(shared_cache))
    code, out, _err = cli_run(capsys, "linear", "--runs", "--source", str(real_index_26.source.root))
    assert code == 0 and "what it runs on CUDA, through the operators it calls" in out and "(via addmm)" in out
    assert "no launch, jit kernel or library call found" not in out


def test_depthwise3d_forward_runs_no_backward_kernel(real_index_26):
    # the backward launches sit in #define DWCONV3D_BACKWARD_* bodies after conv_depthwise3d_cuda ends (459)
    names = {r.name for r in _first(real_index_26, "conv_depthwise3d")}
    assert names == {"conv_depthwise3d_cuda_kernel"}, names
    where = real_index_26.where("aten/src/ATen/native/cuda/DepthwiseConv3d.cu", 600)
    assert where.function.rsplit("::", 1)[-1] == "_depthwise_3d_backward_cuda_out" and where.end_line == 633


def test_nll_loss_launches_once_each_at_their_launch_line(real_index_26):
    runs = _first(real_index_26, "nll_loss_forward")
    assert sorted((r.name, r.line) for r in runs) == [
        ("nll_loss_forward_no_reduce_cuda_kernel", 312), ("nll_loss_forward_reduce_cuda_kernel_1d", 359),
        ("nll_loss_forward_reduce_cuda_kernel_2d", 385)]


def test_example_with_out_reaches_the_out_overload(real_index_26, capsys, monkeypatch, shared_cache):
    monkeypatch.setenv("ATENMAP_CACHE", str(shared_cache))
    code, out, _err = cli_run(capsys, "chain", "add", "--key", "CUDA", "--json", "--source",
                              str(real_index_26.source.root), "--example",
                              "torch.add(torch.randn(3), torch.randn(3), out=y)")
    d = json.loads(out)
    assert code == 0 and d["op"] == "add.out" and d["given"] == ["call torch.add", "shapes 3, 3"]


def test_conv2d_runs_cudnn_first_the_selector_s_order(real_index_26):
    # Note [Backends a selector returns]: _convolution's `switch (backend)` follows _select_conv_backend,
    # which returns ConvBackend::Cudnn before CudaDepthwise2d
    for facts in (None, CallFacts(dtype="Float")):
        runs = _first(real_index_26, "conv2d", facts=facts)
        assert runs[0].role == "library" and "cudnn" in runs[0].name.lower(), runs[:2]
        names = [r.name for r in runs]
        assert "conv_depthwise2d_forward_kernel" in names  # kept, after cuDNN
        assert names.index("conv_depthwise2d_forward_kernel") > 0  # after the selector's first backend


def test_operator_passed_by_name_is_its_call(real_index_26):
    # abs's CompositeExplicitAutograd kernel passes at::abs_out to unary_op_impl_with_complex_to_float,
    # which calls its parameter; logical_and passes static_cast<OutFunc>(at::logical_and_out)
    for op, via in (("abs", "abs_out"), ("logical_and", "logical_and_out")):
        runs = _first(real_index_26, op)
        assert runs and runs[0].name == "vectorized_elementwise_kernel", (op, runs[:1])
        assert via in runs[0].via[0], runs[0].via


def test_default_call_has_fresh_tensors_in_the_default_memory_format(real_index_26):
    # `switch (memory_format)` on input_.suggest_memory_format(), set outside the AT_DISPATCH lambda
    names = [r.name for r in _first(real_index_26, "avg_pool2d")]
    assert names.index("avg_pool2d_out_cuda_frame") < names.index("avg_pool2d_out_cuda_frame_nhwc")
    names = [r.name for r in _first(real_index_26, "upsample_bilinear2d.vec")]
    assert names[0] == "upsample_bilinear2d_out_frame", names
    # a user's --dtype says nothing of the layout: both stay, neither is dropped
    names = [r.name for r in _first(real_index_26, "avg_pool2d", facts=CallFacts(dtype="Float"))]
    assert {"avg_pool2d_out_cuda_frame", "avg_pool2d_out_cuda_frame_nhwc"} <= set(names)


def test_a_kernel_that_launches_nothing_comes_after_library_calls(real_index_26):
    # the linalg drivers' lazy_* wrappers (BatchLinearAlgebraLib) launch nothing themselves
    runs = _first(real_index_26, "linalg_cholesky_ex")
    assert runs[0].role == "library", runs[:3]
    kernels = [i for i, r in enumerate(runs) if r.role == "kernel"]
    assert all(i > 0 for i in kernels)


def test_a_converting_operator_runs_the_casting_kernel_not_a_memcpy(real_index_26):
    # to.dtype has a required ScalarType parameter: copy_'s memcpy_eligible (same dtypes) is false
    # and gpu_kernel's needs_dynamic_casting true; reached through direct_copy_kernel_cuda, whose
    # gpu_kernel the tree shows "expanded above" (Note [Every way to a run])
    runs = _first(real_index_26, "to.dtype")
    assert (runs[0].name, runs[0].line) == ("unrolled_elementwise_kernel", 201), runs[:2]
    names = [r.name for r in runs]
    assert names.index("CUDACachingAllocator::memcpyAsync") > 0  # kept, later
    # a copy of one dtype: the memcpy first
    assert _first(real_index_26, "clone")[0].name == "CUDACachingAllocator::memcpyAsync"


def test_each_thing_that_runs_once_before_its_other_launch_lines(real_index_26):
    # Note [Each thing that runs once, first]: the first lines name different kernels
    for op in ("add.out", "mul.Tensor", "clone"):
        head = [r.name for r in _first(real_index_26, op)[:2]]
        assert len(set(head)) == len(head), (op, head)


def test_a_parameter_named_like_a_stub_is_not_that_stub(real_index_26):
    # scatter_impl(..., FillStub& fill_stub) calls its parameter, not Fill.cpp's fill_stub
    chain = real_index_26.chain("scatter_reduce.two", keys=["CUDA"])
    assert "fill_kernel_cuda" not in {s.symbol.rsplit("::", 1)[-1] for kc in chain.keys for t in kc.steps
                                      for s in t.walk()}
    assert [r.name for r in chain.runs][:1] == ["_scatter_gather_elementwise_kernel"]


def test_a_scan_of_a_tensor_is_not_a_vector_s_cub_scan(real_index_26):
    # ScanUtils' scan_dim: `if (self.numel() == self.size(dim))` (a vector) -> cub; else per dim
    runs = _first(real_index_26, "cumsum")
    assert runs[0].name.startswith("tensor_kernel_scan"), runs[:2]


@pytest.mark.parametrize("op,operator,kernels", [
    ("isnan", "ne", {"vectorized_elementwise_kernel", "unrolled_elementwise_kernel", "elementwise_kernel"}),
    ("outer", "mul", {"vectorized_elementwise_kernel", "unrolled_elementwise_kernel", "elementwise_kernel"}),
])
def test_an_operator_written_on_tensors_is_its_operator_call(real_index_26, op, operator, kernels):
    # Note [Operators written on tensors]: `self != self` is self.ne(self); the composite's CUDA
    # runs are that operator's kernels
    chain = real_index_26.chain(op, keys=["CUDA"])
    calls = [s for kc in chain.keys for t in kc.steps for s in t.walk() if s.role.value == "op_call"]
    assert any(s.symbol.startswith(f"aten::{operator} (operator") for s in calls), [s.symbol for s in calls]
    runs = chain.runs
    assert runs and runs[0].name in kernels and operator in " ".join(runs[0].via), runs[:1]


def test_a_mutable_argument_is_not_an_out_variant(real_index_26):
    # Note [Mutable arguments are not outputs]: at::rrelu_with_noise(...) reaches
    # rrelu_with_noise(Tensor self, Tensor(b!) noise, ...), so rrelu runs its kernel
    assert [r.name for r in real_index_26.chain("rrelu", keys=["CUDA"]).runs][:1] == ["rrelu_with_noise_cuda_kernel"]


def test_a_scalar_method_is_not_an_operator_call(real_index_26):
    # Note [Methods of other classes]: rrelu's `lower.to<double>()` is Scalar::to, not aten::to
    chain = real_index_26.chain("rrelu", keys=["CUDA"])
    assert "aten::to" not in {s.symbol for kc in chain.keys for t in kc.steps for s in t.walk()}


def test_a_copy_of_a_strided_view_runs_the_strided_loop(real_index_26):
    # Note [A copy of a view is strided]: expand_copy clones an expanded view, diag_embed copies into
    # a diagonal: neither iterator is contiguous, so no memcpy and no vectorized kernel first
    for op in ("expand_copy", "permute_copy", "diag_embed"):
        runs = _first(real_index_26, op)
        assert runs[0].name == "elementwise_kernel", (op, runs[:2])
    # a plain copy still takes the memcpy first
    assert "memcpy" in _first(real_index_26, "copy_")[0].name.lower()


def test_an_unqualified_call_of_a_private_operator(real_index_26):
    # Note [Unqualified calls in at::native]: adaptive_avg_pool2d's `return _adaptive_avg_pool2d_symint(...)`
    runs = _first(real_index_26, "adaptive_avg_pool2d")
    pool = next(r for r in runs if r.name == "adaptive_average_pool")
    assert "aten::_adaptive_avg_pool2d" in pool.via or "_adaptive_avg_pool2d" in " ".join(pool.via), pool.via
    assert runs.index(pool) < 3
    # item's `return _local_scalar_dense(self);`: vulkan::ops' function of that name is not visible
    # from at::native, so the call is the operator's (its copy to the host, not the sparse path's sum)
    item = _first(real_index_26, "item")
    assert item[0].name == "at::cuda::memcpy_and_sync" and item[0].via == ("aten::_local_scalar_dense",), item[:2]


def test_a_view_that_copies_is_expanded(real_index_26):
    # Note [Views that copy]: chalf is `self.to(kComplexHalf)`, a conversion: the casting kernel, no memcpy
    runs = _first(real_index_26, "chalf")
    assert runs and runs[0].name == "unrolled_elementwise_kernel", runs[:2]
    # native_channel_shuffle makes a permuted view contiguous: a strided copy
    assert _first(real_index_26, "native_channel_shuffle")[0].name == "elementwise_kernel"


def test_an_operator_call_binds_its_callee_s_parameters(real_index_26):
    # Note [Arguments an operator call binds]: index_put's `.index_put_(indices, value, accumulate)`
    # and index_put_'s `at::_index_put_impl_(self, indices, value, accumulate, /*unsafe=*/false)`
    # carry the schema default accumulate=False to `if (... && (accumulate || deterministicAlgorithms()))`:
    # the default call takes the index kernel, the sort (thrust) stays in the answer after it
    for op in ("index_put", "index_put_"):
        names = [r.name for r in _first(real_index_26, op)]
        assert names[0] == "index_elementwise_kernel", (op, names[:3])
        assert "thrust::sort_by_key" in names
    # `r.copy_(self)` in _to_copy binds copy_'s src to the caller's self, never copy_'s own self
    # (which would make `self.is_same(src)` true and drop every run of chalf)
    assert _first(real_index_26, "chalf")[0].name == "unrolled_elementwise_kernel"


def test_a_special_value_of_an_argument_after_the_general_case(real_index_26):
    # Note [Special cases after the general one]: adaptive_avg_pool2d's `output_size[0] == 1 && ...`
    # takes mean(); polygamma's `n == 0` digamma, `n == 1` trigamma: the general code ranks first
    pool = _first(real_index_26, "adaptive_avg_pool2d")
    assert pool[0].name == "adaptive_average_pool", pool[:2]
    assert "reduce_kernel" in [r.name for r in pool]  # the special case stays, after it
    assert _first(real_index_26, "polygamma")[0].name == "polygamma"
    # a size the code derives is no argument: softmax's `inner_size == 1` stays its main path
    assert _first(real_index_26, "_softmax_backward_data")[0].name == "softmax_warp_backward"
    # nor is a tensor's rank: linear's `input.dim() == 2 && bias.defined()` addmm comes first
    assert "gemm" in _first(real_index_26, "linear")[0].name
    # one dimension named by the rank is a special value too: scan_dim's `dim == ndim - 1` takes the
    # innermost-dimension kernel, the outer dimensions' kernel serves every other dim
    for op, kernel in (("cumsum", "tensor_kernel_scan_outer_dim"), ("cummax", "tensor_kernel_scan_outer_dim_with_indices")):
        names = [r.name for r in _first(real_index_26, op)]
        assert names[0] == kernel, names[:3]
        assert kernel.replace("outer", "innermost") in names[1:], names[:3]
    # and an enumerator: embedding_bag's `if (mode == EmbeddingBagMode::MAX)` max kernel after sum/mean's
    names = [r.name for r in _first(real_index_26, "embedding_bag.padding_idx")]
    assert names[:2] == ["EmbeddingBag_updateOutputKernel_sum_mean", "EmbeddingBag_updateOutputKernel_max"], names


def test_a_copy_of_a_variable_last_set_to_a_strided_view(real_index_26):
    # Note [A copy of a view is strided]: repeat_interleave.self_int's `input = input.expand_symint(...)`,
    # its last assignment in the body, then `input.clone(...)`: the strided loop, not a memcpy
    names = [r.name for r in _first(real_index_26, "repeat_interleave.self_int")]
    assert "elementwise_kernel" in names[:3], names[:4]
    memcpy = next(i for i, n in enumerate(names) if "memcpy" in n.lower())
    assert names.index("elementwise_kernel") < memcpy, names[:4]  # the strided loop before the copy engine


def test_the_native_overload_the_schema_s_kinds_fit_and_arithmetic_on_calls(real_index_26):
    # Note [Parameter kinds]: gradient.scalarint reaches its own `gradient(const Tensor&, const
    # std::optional<Scalar>&, std::optional<int64_t>, int64_t)` only, not the five other overloads;
    # Note [Operators written on tensors]: its helper's `(at::slice(self, d, 2) - at::slice(...)) / dx`
    # is a sub (and a div)
    chain = real_index_26.chain("gradient.scalarint", keys=["CUDA"])
    natives = [s for kc in chain.keys for t in kc.steps for s in t.walk() if s.role == "native"
               and s.symbol == "at::native::gradient"]
    assert [s.line for s in natives] == [1152], natives
    runs = [r for r in chain.runs if r.key == "CUDA"]
    assert runs[0].name == "vectorized_elementwise_kernel" and "aten::sub" in runs[0].via, runs[:2]
    # repeat_interleave.self_int: its SymInt overload, whose clone of an expanded view runs the strided loop
    assert _first(real_index_26, "repeat_interleave.self_int")[0].name == "elementwise_kernel"


def test_a_broadcast_operand_runs_the_strided_loop(real_index_26):
    # Note [Broadcast operands are strided]: outer's `self.reshape({self.size(0), 1}) * vec2`
    runs = _first(real_index_26, "outer")
    assert runs[0].name == "elementwise_kernel" and "aten::mul" in " ".join(runs[0].via), runs[:2]
    assert _first(real_index_26, "mul.Tensor")[0].name != "elementwise_kernel"  # fresh operands: no broadcast said


def test_arithmetic_on_calls_given_an_auto_copy_of_a_tensor(real_index_26):
    # Note [Operators written on tensors]: diff's helper has `auto result = self;` then
    # `result = at::narrow_symint(result, dim, 1, n) - at::narrow_symint(result, dim, 0, n)`: a sub,
    # on the path the schema defaults take (no prepend or append: no cat)
    runs = _first(real_index_26, "diff")
    assert "aten::sub" in runs[0].via, runs[:2]


def test_a_structured_kernel_takes_the_call_s_arguments_and_reduction_mean(real_index_26):
    # Note [Arguments an operator call binds]: nll_loss's `at::nll_loss_forward_symint(self, target,
    # weight, reduction, ignore_index)` binds TORCH_IMPL_FUNC(nll_loss_forward_out_cuda)'s first five;
    # the schema default reduction=Mean (at::Reduction::Mean, 1) makes `reduction == Reduction::None`
    # false: the reducing kernel first, the no-reduce one still in the answer
    names = [r.name for r in _first(real_index_26, "nll_loss")]
    assert names[0].startswith("nll_loss_forward_reduce_cuda_kernel"), names[:3]
    assert "nll_loss_forward_no_reduce_cuda_kernel" in names


def test_a_method_of_a_temporary_is_the_class_s_method(real_index_26):
    # Note [Member calls on locals] (extract/calls.py): kron's `KronImpl(self, other).kron()` calls
    # KronImpl::kron, which calls at::mul; it is no call of the kron operator (which would loop back)
    runs = _first(real_index_26, "kron")
    assert runs and runs[0].name == "vectorized_elementwise_kernel", runs[:2]
    assert "elementwise_kernel" in [r.name for r in runs]
    tree = [s for kc in real_index_26.chain("kron", keys=["CUDA"]).keys for t in kc.steps for s in t.walk()]
    assert any(s.symbol.endswith("KronImpl::kron") for s in tree)
    assert not any(s.role == "op_call" and s.symbol.startswith("aten::kron") for s in tree)



def test_a_helper_s_default_argument_is_bound_and_no_epilogue_runs_for_mm(real_index_26):
    # Note [Arguments a caller binds]: mm calls addmm_out_cuda_impl(result, result, self, mat2, 0, 1),
    # leaving out `Activation activation = Activation::None`; and a backend kernel's operator calls
    # (its GELU/RELU epilogue's at::gelu_/at::relu_) are not its runs (Note [Operator calls in kernel chains])
    from atenmap.resolve.runs import call_arguments

    defaults: list = []
    text = "Tensor& impl(Tensor& r, const Scalar& beta, Activation activation = Activation::None, int k=2) {"
    assert call_arguments(text, "impl", definition=True, defaults=defaults) == ["r", "beta", "activation", "k"]
    assert defaults == [None, None, "Activation::None", "2"]
    runs = _first(real_index_26, "mm")
    assert "gemm" in runs[0].name and not [r for r in runs if r.via and r.via[-1] in ("aten::gelu_", "aten::relu_")]


def test_why_keeps_the_selector_s_order(real_index_26):
    # --why reads the branches with tree-sitter (extract/branches.py), outermost first: a case label cut
    # at its `::` (`case ConvBackend::`) and the switch looked for after the case lost the order of
    # _select_conv_backend's returns, and the depthwise kernels led conv2d --why
    names = [r.name for r in _first(real_index_26, "conv2d", why=True)]
    assert names.index("cudnnBackendExecute") < names.index("conv_depthwise2d_forward_kernel")


@pytest.mark.parametrize("op", ["conv2d", "conv_transpose2d.input", "mm", "addmm", "linear", "bmm", "softmax.int",
                                "cross_entropy_loss", "topk"])
def test_why_ranks_as_without_it(real_index_26, op):
    # Note [--why does not rank]: --why changes what "when" shows, never which run comes first. Before,
    # conv2d --why led with the bias add_'s elementwise kernel (its --why reasons lack the backend's
    # case) and mm/addmm/linear/bmm --why reordered their BLAS calls.
    plain = [(r.name, r.loc) for r in _first(real_index_26, op)]
    why = [(r.name, r.loc) for r in _first(real_index_26, op, why=True)]
    assert plain == why


def test_an_iterator_built_on_broadcast_inputs_runs_the_strided_loop(real_index_26):
    # Note [An iterator built on broadcast inputs] (strided.py): addr's iterator (build_addr_iter's
    # `vec1.reshape({vec1_size0, 1})`) and group_norm's (`mean.view({N, G, 1})`) broadcast, so gpu_kernel
    # runs its strided elementwise_kernel (the GPU oracle ran only that one for both)
    runs = _first(real_index_26, "addr")
    assert runs[0].name == "elementwise_kernel" and runs[0].file.endswith("CUDALoops.cuh"), runs[:2]
    names = [r.name for r in _first(real_index_26, "native_group_norm")]
    assert names.index("elementwise_kernel") < names.index("vectorized_elementwise_kernel"), names
    # an elementwise op on fresh tensors still leads with the vectorized loop
    assert _first(real_index_26, "mul.out")[0].name == "vectorized_elementwise_kernel"


def test_kernels_passed_to_a_callback_are_the_launch_s_kernels(real_index_26):
    # Note [Kernels passed to a callback] (callbacks.py): mem-efficient attention launches
    # `kernel_fn<<<...>>>` in a lambda that dispatch_cutlassF/B's tables hand their __global__ kernels;
    # the runs are those kernels (what the profiler names), float32 on sm80+ first, at the launch line
    fwd = _first(real_index_26, "_efficient_attention_forward")
    assert fwd[0].name == "fmha_cutlassF_f32_aligned_64x64_rf_sm80", fwd[:2]
    assert (fwd[0].file, fwd[0].line) == ("aten/src/ATen/native/transformers/cuda/attention.cu", 1383)
    assert "kernel_fn" not in [r.name for r in fwd]
    names = {r.name for r in fwd}
    assert {"fmha_cutlassF_f16_aligned_64x64_rf_sm80", "fmha_cutlassF_bf16_aligned_64x64_rf_sm80",
            "fmha_cutlassF_f32_aligned_64x64_rf_sm75"} <= names  # every table's kernels stay, after
    bwd = _first(real_index_26, "_efficient_attention_backward")
    assert bwd[0].name.startswith("fmha_cutlassB_f32_") and bwd[0].name.endswith("_sm80"), bwd[:2]
    assert bwd[0].line == 745
    # the dispatcher's branch names the table's dtype (`std::is_same_v<DT, cutlass::bfloat16_t>`):
    # --dtype keeps that dtype's tables only
    bf16 = _first(real_index_26, "_efficient_attention_forward", facts=CallFacts(dtype="BFloat16"))
    assert bf16 and all(r.name.startswith("fmha_cutlassF_bf16_") for r in bf16), [r.name for r in bf16]


def test_a_library_call_in_a_device_lambda_is_the_kernel_s_code(real_index_26):
    # Note [Library calls in device code] (devicecode.py): unpack_pivots_cuda_kernel's
    # `[=]C10_DEVICE(const int idx) { ... thrust::swap(...) }` runs inside the _elementwise_kernel
    # that _launch_kernel launches: thrust::swap is no run, the launch is the first
    runs = _first(real_index_26, "lu_unpack")
    assert runs[0].name == "_elementwise_kernel" and runs[0].file.endswith("cuda/LinearAlgebra.cu"), runs[:2]
    assert "thrust::swap" not in [r.name for r in runs]
    tree = real_index_26.chain("lu_unpack", keys=["CUDA"], runs=False)
    assert not any(s.symbol == "thrust::swap" for kc in tree.keys for top in kc.steps for s in top.walk())


def test_a_backend_a_selector_picks_in_an_if_chain(real_index_26):
    # Note [A branch on a selector's value] (selectors.py): _batch_norm_with_update_cuda and
    # _new_batch_norm_backward_cuda branch on `_select_batch_norm_backend(...)`'s value with
    # `if (backend == BatchNormBackend::Cudnn)`: the cuDNN operator is kept in the kernel's chain, and
    # ranks first, as the selector returns Cudnn first (Native last)
    fwd = _first(real_index_26, "_batch_norm_with_update")
    assert fwd[0].name == "cudnnBatchNormalizationForwardTrainingEx", fwd[:2]
    bwd = _first(real_index_26, "batch_norm_backward")
    assert bwd[0].name == "cudnnBatchNormalizationBackwardEx", bwd[:2]
    names = [r.name for r in bwd]
    assert names.index("batch_norm_backward_kernel") > 0  # the native path stays, after
    # an operator called under a parameter's value (addmm's `case Activation::GELU`) is still dropped
    assert "aten::gelu_" not in [s.symbol for kc in real_index_26.chain("mm", keys=["CUDA"], runs=False).keys
                                 for top in kc.steps for s in top.walk()]


def test_the_selector_s_conditions_decide_a_given_dtype(real_index_26):
    # Note [What a selector returns a value for] (selectors.py): _select_batch_norm_backend returns
    # Cudnn only under `input.scalar_type() != at::kBFloat16 && ...`: a bfloat16 call never reaches
    # cuDNN, a float32 one may (the other conditions stay undecided), and without a dtype the ranking
    # keeps the selector's order
    bf16 = [r.name for r in _first(real_index_26, "_batch_norm_with_update", facts=CallFacts(dtype="BFloat16"))]
    assert bf16 and not any(n.startswith("cudnn") for n in bf16), bf16[:3]
    f32 = _first(real_index_26, "_batch_norm_with_update", facts=CallFacts(dtype="Float"))
    assert f32[0].name == "cudnnBatchNormalizationForwardTrainingEx" and f32[0].decided == "undecided", f32[:1]
    composite = [r.name for r in real_index_26.chain("batch_norm", facts=CallFacts(dtype="BFloat16")).runs]
    assert composite and not any(n.startswith("cudnn") for n in composite), composite[:3]


def test_two_arguments_of_the_same_sizes_are_a_special_case(real_index_26):
    # Note [Special cases after the general one] (runs.py): cross_entropy_loss reads `if
    # (self.sym_sizes() == target.sym_sizes())` as class probabilities (mul, sum); the general case,
    # class indices, runs log_softmax then nll_loss, and leads, though it comes later in the text
    runs = [r for r in real_index_26.chain("cross_entropy_loss").runs]
    assert runs[0].via[-1:] == ("aten::_log_softmax",) and runs[0].name == "softmax_warp_forward", runs[:2]
    names = [r.name for r in runs]
    assert names.index("nll_loss_forward_reduce_cuda_kernel_2d") < names.index("reduce_kernel")  # sum's, after
    # a dtype alone leaves label_smoothing at its default: the `else if (label_smoothing > 0.0)` path's
    # sum ranks with what the call cannot take, as without facts (Note [A call with the defaults])
    typed = real_index_26.chain("cross_entropy_loss", facts=CallFacts(dtype="Float")).runs
    assert typed[0].name == "softmax_warp_forward", typed[:2]


def test_a_library_s_plan_building_front_end_is_set_up(real_index_26):
    # Note [Set-up calls] (libraries.py): cuDNN v8 builds its plan with cudnn_frontend (builders,
    # heuristics, getWorkspaceSize) and runs it with cudnnBackendExecute: conv2d leads with that call;
    # v7's cudnnConvolutionForward runs only with TORCH_CUDNN_V8_API_DISABLED=1, so it comes after the
    # default settings' runs (Note [A setting left at its default]); the front end's calls after the work
    runs = [r for r in real_index_26.chain("conv2d").runs]
    names = [r.name for r in runs]
    assert names[0] == "cudnnBackendExecute", runs[:2]
    v7 = runs[names.index("cudnnConvolutionForward")]
    assert any("cuDNN API: v7" in w.text for w in v7.when)
    front = [r for r in runs if r.name.startswith("cudnn_frontend::")]
    assert front and all(r.setup for r in front)


def test_a_way_only_the_guessed_strides_rule_out_comes_before_repeats(real_index_26):
    # Note [Strides are the kernel's operands']: prelu's weight is broadcast inside the operator, where
    # no rule sees it; the strided loop (launch_legacy_kernel's elementwise_kernel) is named in the
    # first three, after the vectorized loop the fresh tensors take, before its narrower widths
    for op in ("prelu", "mul.out"):
        runs = _first(real_index_26, op)
        names = [r.name for r in runs[:3]]
        assert names[0] == "vectorized_elementwise_kernel" and "elementwise_kernel" in names, (op, names)
        assert len(set(names)) == 3, (op, names)
        strided = runs[names.index("elementwise_kernel")]
        assert strided.file.endswith("CUDALoops.cuh")
    # the branch the guessed strides decide is shown with it
    assert strided.when[0].text == "after if (contiguous) return", strided.when
    # an example's tensors are the user's, not the iterator's (a broadcast `y`): the strided way stays,
    # not decided by the given arguments, after the way the fresh tensors take
    facts = CallFacts(call="torch.mul", operator="mul", dtype="Float", shapes=((64, 64), (64,)))
    runs = _first(real_index_26, "mul.Tensor", facts=facts)
    names = [r.name for r in runs]
    assert names[0] == "vectorized_elementwise_kernel" and "elementwise_kernel" in names, names
    assert runs[names.index("elementwise_kernel")].decided == "undecided"


def test_another_machine_s_code_and_overloads_by_element_type_on_the_cpu(real_index_26):
    # Note [The machine a platform's build is for] (conditions.py): mm's `#if defined(__aarch64__) &&
    # AT_MKLDNN_ACL_ENABLED()` mkldnn_matmul is an edge case of the common (x86-64 Linux) build;
    # Note [Overloads by element type] (runs.py): CPUBlas.cpp's gemm overload on `const double *a`
    # runs dgemm_ for double only, so the float call's sgemm_ comes before it
    runs = [r for r in real_index_26.chain("mm", keys=["CPU"]).runs if r.key == "CPU"]
    names = [r.name for r in runs]
    assert names[0] == "at::native::cpublas::gemm", names[:3]
    aarch64 = next(i for i, r in enumerate(runs) if any("__aarch64__" in w.text for w in r.when))
    assert aarch64 > names.index("sgemm_"), names
    assert names.index("sgemm_") < names.index("dgemm_"), names
    assert any(w.kind == "dtypes" and w.text.startswith("double") for w in runs[names.index("dgemm_")].when)


def test_a_selector_s_branch_on_a_field_the_caller_binds(real_index_26):
    # Note [A selector's branch on a field the caller binds] (runs.py): _convolution sets
    # `params.transposed = transposed_;` and conv2d passes transposed=false, so _select_conv_backend's
    # `if (params.transposed) return ConvBackend::MkldnnTranspose;` is no backend of conv2d: on the CPU
    # it leads with oneDNN's forward convolution, conv_transpose2d with the transposed one
    conv = [r for r in real_index_26.chain("conv2d", keys=["CPU"]).runs if r.key == "CPU"]
    assert conv[0].name == "ideep::convolution_forward::compute_v3", [r.name for r in conv[:3]]
    transposed = [r.name for r in real_index_26.chain("conv_transpose2d.input", keys=["CPU"]).runs[:3]]
    assert "ideep::convolution_transpose_forward::compute_v3" in transposed, transposed


def test_a_string_default_chooses_the_enum_its_callee_branches_on(real_index_26):
    # Note [A value chosen by a string]: pad's `str mode="constant"` becomes `at::padding_mode::constant`
    # in an immediately-invoked lambda, goes on as `static_cast<int64_t>(mode_enum)`, and
    # _pad_enum_symint casts it back before `if (mode == at::padding_mode::constant)`
    runs = _first(real_index_26, "pad")
    names = [r.name for r in runs]
    constant = [i for i, r in enumerate(runs) if any(v.endswith(("fill_", "copy_")) for v in r.via)]
    padding = [i for i, n in enumerate(names) if n.startswith(("reflection_pad", "replication_pad"))]
    assert constant and padding and max(constant[:3]) < min(padding), names
    assert len(padding) == 6  # the other modes' kernels stay in the answer, after


def test_a_string_the_example_passes_decides_the_enum(real_index_26):
    # the same flow for a user's call: mode="reflect" by keyword rules the constant path out (an
    # `if`); the other modes' `case`s stay, undecided (a case label may share its statement)
    from atenmap.resolve.callfacts import parse_example
    facts = parse_example('torch.nn.functional.pad(torch.randn(2, 3, 4), (1, 1), mode="reflect")')
    runs = _first(real_index_26, "pad", facts=facts)
    assert runs and runs[0].name.startswith("reflection_pad"), [r.name for r in runs]
    assert not any(v.endswith("constant_pad_nd") for r in runs for v in r.via), [r.via for r in runs]


def test_an_operator_whose_work_is_shown_above_is_another_way(real_index_26):
    # Note [An operator whose work is shown above] (chain.py): _pad_circular copies with copy_,
    # which constant_pad_nd's expansion showed first; mode="circular" rules constant_pad_nd out
    from atenmap.resolve.callfacts import parse_example
    facts = parse_example('torch.nn.functional.pad(torch.randn(2, 3, 4), (1, 1), mode="circular")')
    runs = _first(real_index_26, "pad", facts=facts)
    assert any(r.via and r.via[-1].endswith("copy_") for r in runs), [r.name for r in runs]
    # masked_fill clones (clone -> copy_): quantile's copies stay once scalar_to_tensor's fill is gone
    assert any(v.endswith("copy_") for r in _first(real_index_26, "quantile") for v in r.via)


def test_a_setting_left_at_its_default_ranks_first(real_index_26):
    """Note [A setting left at its default] (resolve/choices.py): cuBLAS before cuBLASLt for mm on CUDA
    (Context.h's blas_preferred_backend is Cublas), cuSOLVER before MAGMA for svd (linalg library
    Default: ``use_magma`` false); the other values' runs stay, after."""
    names = [r.name for r in _first(real_index_26, "mm")]
    assert names.index("cublasSgemm") < names.index("cublasLtMatmul")
    svd = _first(real_index_26, "linalg_svdvals")
    libraries = [r.name for r in svd if r.role == "library"]
    assert not libraries[0].startswith("magma_") and any(n.startswith("magma_") for n in libraries)
    assert "not Magma" in " ".join(w.text for w in svd[0].when)
    eigh = _first(real_index_26, "linalg_eigh")  # ``case Cusolver: default:`` stacked: the default's way
    assert eigh[0].role == "library" and not eigh[0].name.startswith("magma_"), eigh[:2]
    assert "Cusolver or default" in " ".join(w.text for w in eigh[0].when)
    rocm = [r.name for r in real_index_26.chain("mm", keys=["CUDA"], platform="rocm").runs]
    lt = next(i for i, n in enumerate(rocm) if n.startswith("cublasLtMatmul"))
    assert lt < next(i for i, n in enumerate(rocm) if n.startswith("cublasSgemm"))  # hipBLASLt is ROCm's default


def test_dtype_narrows_a_specialization_whose_step_names_its_arguments(real_index_26):
    """CUDASolver.cpp's ``template<> void gesvd_buffersize<double>(...)``: its step carries
    ``[specialization<double>]`` after the name (Note [Specializations by dtype])."""
    every = {r.name for r in _first(real_index_26, "linalg_svdvals")}
    assert {"cusolverDnSgesvd_bufferSize", "cusolverDnDgesvd_bufferSize"} <= every
    floats = {r.name for r in _first(real_index_26, "linalg_svdvals", facts=CallFacts(dtype="Float"))}
    assert "cusolverDnSgesvd_bufferSize" in floats
    assert not floats & {"cusolverDnDgesvd_bufferSize", "cusolverDnCgesvd_bufferSize", "cusolverDnZgesvd"}


def test_a_stub_kernel_whose_work_is_operators(real_index_26):
    """Note [A stub kernel that calls an operator]: CUDA's isin_default_kernel_gpu computes with
    ``elements.unsqueeze(-1).eq(...).any(-1)``; its operators' kernels are isin's runs, though the
    structured native function reaches device code (the stub) and drops its own operator calls."""
    runs = _first(real_index_26, "isin.Tensor_Tensor")
    assert runs[0].role == "launch", runs[:2]
    names = {r.name for r in runs}
    assert {"reduce_kernel", "vectorized_elementwise_kernel"} <= names
    vias = {v for r in runs for v in r.via}
    assert {"aten::any", "aten::eq"} & vias or {"aten::all", "aten::ne"} & vias, vias


def test_a_dtype_generic_vendor_call_of_each_specialization_stays(real_index_26):
    """cuSOLVER's 64-bit API is one function for every dtype: CUDASolver.cpp's ``xsyevd<float>`` and
    ``xsyevd<double>`` each call ``cusolverDnXsyevd`` on their own line. Narrowed to float64, the
    double specialization's call stays (it was named once, under ``xsyevd<float>``, and dropped)."""
    f64 = _first(real_index_26, "linalg_eigh", facts=CallFacts(dtype="Double"))
    names = {r.name for r in f64}
    assert {"cusolverDnXsyevd", "cusolverDnXsyevd_bufferSize", "cusolverDnDsyevd"} <= names, sorted(names)
    assert not names & {"cusolverDnSsyevd", "cusolverDnCheevd"}
    assert "cusolverDnXgeqrf" in {r.name for r in _first(real_index_26, "linalg_qr", facts=CallFacts(dtype="Double"))}
    f32 = _first(real_index_26, "linalg_eigh", facts=CallFacts(dtype="Float"))
    assert not {r.name for r in f32} & {"cusolverDnCheevj", "cusolverDnZheevd"}  # syevj<c10::complex<float>, float>
