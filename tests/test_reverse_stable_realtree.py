"""Issue 38 (Truth IV), the reverse lookup on the real 2.6.0 tree: kernel names matched by what is stable
(nvcc's internal namespaces, functions named in template arguments, names cut short), code of another
version said in one line, library-internal kernels and copies named as their library's, and operators that
run another's kernel through ``at::cuda::`` (no dispatcher)."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.realtree

# as torch 2.11 on an H200 printed them (fixtures/oracle)
NORMAL = ("void at::native::(anonymous namespace)::distribution_elementwise_grid_stride_kernel<float, 4, "
          "at::native::templates::cuda::normal_and_transform<float, float, at::CUDAGeneratorImpl*, "
          "at::native::templates::cuda::normal_kernel<at::CUDAGeneratorImpl*>(at::TensorBase const&, double, double, "
          "at::CUDAGeneratorImpl*)::{lambda()#1}::operator()() const::{lambda()#2}::operator()() const::"
          "{lambda(float)#1}>(at::TensorIteratorBase&, at::CUDAGeneratorImpl*, at::native::templates::cuda::"
          "normal_kernel<at::CUDAGeneratorImpl*>(at::TensorBase const&, double, double, at::CUDAGeneratorImpl*)::"
          "{lambda()#1}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1})::"
          "{lambda(curandStatePhilox4_32_10*)#2}, at::native::(anonymous namespace)::distribution_nullary_kernel<"
          "float, float, float4>::{lambda(int, float)#1}>(long, at::PhiloxCudaState, float, float)")
UNIFORM = ("void at::native::(anonymous namespace)::distribution_elementwise_grid_stride_kernel<float, 4, "
           "at::native::templates::cuda::uniform_and_transform<float, float, at::CUDAGeneratorImpl*, "
           "at::native::templates::cuda::uniform_kernel<at::CUDAGeneratorImpl*>(at::TensorIteratorBase&, double, "
           "double, at::CUDAGeneratorImpl*)::{lambda()#1}::operator()() const::{lambda()#2}::operator()() const::"
           "{lambda(float)#1}>(at::TensorIteratorBase&, at::CUDAGeneratorImpl*, float)")
BCE_BACKWARD = ("void at::native::vectorized_elementwise_kernel<4, _INTERNAL_5cd812b1_7_Loss_cu_5b0651e1::"
                "(anonymous namespace)::binary_cross_entropy_backward_out_kernel(at::Tensor&, at::Tensor const&, "
                "at::Tensor const&, at::Tensor const&)::{lambda()#1}::operator()() const::{lambda()#2}::"
                "operator()() const::{lambda(float, float, float)#1}, std::array<char*, 4ul> >(int, "
                "_INTERNAL_5cd812b1_7_Loss_cu_5b0651e1::(anonymous namespace)::binary_cross_entropy_backward_out_"
                "kernel(at::Tensor&, at::Tensor const&, at::Tensor const&, at::Tensor const&)::{lambda()#1}::"
                "operator()() const::{lambda()#2}::operator()() const::{lambda(float, float, float)#1}, "
                "std::array<char*, 4ul>)")
EQUAL_BOOL = ("void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<bool, bool, bool, "
              "at::native::(anonymous namespace)::CompareEqFunctor<bool> >, std::array<char*, 3ul> >(int, "
              "at::native::BinaryFunctor<bool, bool, bool, at::native::(anonymous namespace)::CompareEqFunctor<bool> >, "
              "std::array<char*, 3ul>)")
XOR_SUM = ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<double, "
           "at::native::xor_sum_functor<float, void>::operator()(at::TensorIterator&)::{lambda(double, double)#1}>, "
           "unsigned int, double, 4, 4> >(at::native::ReduceOp<float, at::native::func_wrapper_t<double, "
           "at::native::xor_sum_functor<float, void>::operator()(at::TensorIterator&)::{lambda(double, double)#1}>, "
           "unsigned int, double, 4, 4>)")


def _ops(match, n=3):
    return [h.op for h in match.hits[:n]]


def test_anonymous_namespace_distribution_kernel_finds_its_source_and_normal(real_index_26):
    m = real_index_26.kernel(NORMAL)
    assert m.definition is not None and m.definition.loc.file.endswith("cuda/DistributionTemplates.h")
    assert any(s.loc.file.endswith("DistributionTemplates.h") for s in m.launches)
    assert any(o.startswith("aten::normal") for o in _ops(m))


@pytest.mark.parametrize("cut", [150, 200, 300])
def test_a_name_cut_after_its_transform_starts_from_the_function_it_names(real_index_26, cut):
    # uniform_and_transform is a function template, not a class: Note [Functions named in template arguments]
    m = real_index_26.kernel(UNIFORM[:cut])
    assert "uniform_and_transform" in UNIFORM[:cut]
    assert _ops(m, 1) == ["aten::uniform_"], _ops(m, 5)


def test_nvcc_internal_namespace_is_no_namespace_of_the_tree(real_index_26):
    m = real_index_26.kernel(BCE_BACKWARD)
    assert any("binary_cross_entropy_backward_out_kernel" in s.symbol and s.loc.file.endswith("cuda/Loss.cu")
               for s in m.functors)
    assert _ops(m, 1)[0].startswith("aten::binary_cross_entropy_backward")


def test_a_direct_at_cuda_call_ranks_its_caller(real_index_26):
    # cuda_equal runs at::cuda::eq(self, src): no aten::eq record, the profiler says aten::equal
    m = real_index_26.kernel(EQUAL_BOOL)
    assert "aten::equal" in _ops(m, 3), _ops(m, 6)
    equal = next(h for h in m.hits if h.op == "aten::equal")
    assert "at::cuda::eq" in equal.reason and "dispatcher" in equal.reason


def test_code_of_another_version_is_said_in_one_line(real_index_26):
    m = real_index_26.kernel(XOR_SUM)  # hash_tensor's functor came after 2.6
    said = [n for n in m.notes if "xor_sum_functor" in n]
    assert len(said) == 1 and "not in PyTorch 2.6" in said[0] and "\n" not in said[0]
    # a name whose code is all there says nothing of the kind
    assert not any("not in PyTorch" in n for n in real_index_26.kernel(NORMAL).notes)
    # an ATen kernel newer than the tree (torch 2.11's vectorized cat): the kernel itself is said missing
    cat = real_index_26.kernel(
        "void at::native::(anonymous namespace)::CatArrayBatchedCopy_vectorized<at::native::(anonymous namespace)::"
        "OpaqueType<8u>, unsigned int, 1, 128, 1, 16, 2>(char*, at::native::(anonymous namespace)::"
        "CatArrInputTensorMetadata<at::native::(anonymous namespace)::OpaqueType<8u>, unsigned int, 128, 1>, "
        "at::native::(anonymous namespace)::TensorSizeStride<unsigned int, 4u>, int, unsigned int)")
    assert cat.definition is None
    assert [n for n in cat.notes if "CatArrayBatchedCopy_vectorized" in n and "not in PyTorch 2.6" in n]


@pytest.mark.parametrize("name,library", [
    ("std::enable_if<!(false), void>::type internal::gemvx::kernel<int, int, float, float, float, float, false, "
     "true, true, false, 6, false, cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<float const>, "
     "cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float>, float> >("
     "cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float const>, "
     "cublasGemvTensorStridedBatched<float>, float>)", "cuBLAS"),
    ("void scal_kernel<float, float, 1, true, 6, 5, 5, 3>(cublasScalParamsEx<float, float>)", "cuBLAS"),
    ("void kernel::partition<float, 1024l, 63l>(long, float*, long, long, long*)", "cuSOLVER"),
    ("void epilogue<sytrd_params<float, 32, 8, 512, 32, 16, 1, 2>, 128, 1, 1>(int, int, sytrd_params<float, 32, 8, "
     "512, 32, 16, 1, 2>::value_type*, int)", "cuSOLVER"),
    ("magma_iset_pointer_kernel(int**, int*, int, int, int, int)", "MAGMA"),
])
def test_library_internal_kernels_are_named_as_their_library(real_index_26, name, library):
    m = real_index_26.kernel(name)
    assert m.library == library and m.definition is None
    assert m.hits


def test_cublaslt_epilogue_is_a_gemm(real_index_26):
    m = real_index_26.kernel("void cublasLt::epilogue::impl::globalKernel<8, 32, float, float, float, true, false, "
                             "false, false, false>(int, int, long, float*, long, float*, long, float const*, "
                             "float const*, float, float, float*, float*, float*, float*)")
    assert m.library == "cuBLASLt"
    top = _ops(m, 3)
    assert "aten::addmm" in top and not any("linalg" in o for o in _ops(m, 10)), top


def test_copies_are_the_runtime_s_by_direction(real_index_26):
    dtoh = real_index_26.kernel("Memcpy DtoH (Device -> Pinned)")
    assert dtoh.library == "CUDA runtime (copy engine)"
    assert _ops(dtoh, 1) == ["aten::_local_scalar_dense"]
    memset = real_index_26.kernel("Memset (Device)")
    assert memset.library == "CUDA runtime (copy engine)"
    assert "aten::_local_scalar_dense" not in _ops(memset, 10)  # a DtoH copy's operator, not a fill's
    assert any(o in ("aten::mm", "aten::addmm") for o in _ops(memset, 3)), _ops(memset, 6)


def test_a_tag_functor_that_leads_nowhere_falls_back_to_the_launch_sites(real_index_26):
    # dists<float>::zero is a tag type in the template arguments: no function makes it, cdist_impl launches it
    m = real_index_26.kernel("void at::native::(anonymous namespace)::cdist_kernel_cuda_impl<float, "
                             "at::native::(anonymous namespace)::dists<float>::zero>(float*, float const*, "
                             "float const*, float, long, long, long, long)")
    assert "aten::_cdist_forward" in _ops(m, 3), _ops(m, 5)


def test_a_name_the_tree_has_nothing_of_is_one_line_naming_the_version(real_index_26):
    name = "void at::native::(anonymous namespace)::frobnicate_quux_kernel<float, 4>(int)"
    m = real_index_26.kernel(name)
    assert not m.found
    assert len(m.notes) == 1 and "\n" not in m.notes[0]
    assert m.notes[0].startswith("no kernel named 'frobnicate_quux_kernel'") and "PyTorch 2.6" in m.notes[0]


def _eq(wrapper: str, dtype: str = "float") -> str:
    functor = (f"at::native::{wrapper}<{dtype}, {dtype}, bool, at::native::(anonymous namespace)::"
               f"CompareEqFunctor<{dtype}> >")
    return (f"void at::native::vectorized_elementwise_kernel<4, {functor}, std::array<char*, 2ul> >(int, {functor}, "
            "std::array<char*, 2ul>)")


@pytest.mark.parametrize("dtype", ["float", "int"])
def test_binary_functor_kernels_are_no_scalar_overload_s(real_index_26, dtype):
    # Note [Scalar operands of a binary kernel]: BinaryFunctor = two device tensors, never eq.Scalar
    m = real_index_26.kernel(_eq("BinaryFunctor", dtype))
    top = [o.split(" ")[0] for o in _ops(m, 3)]
    assert top[0] in ("aten::eq.Tensor", "aten::ne.Tensor"), top
    assert not any(o.endswith(".Scalar") for o in top), top
    assert "aten::equal" in top
    # the unary wrapper holds the CPU scalar: the Scalar overloads stay first
    a = real_index_26.kernel(_eq("AUnaryFunctor", dtype))
    assert _ops(a, 1)[0].split(" ")[0] in ("aten::eq.Scalar", "aten::ne.Scalar"), _ops(a, 3)


# CUB's shared init kernel, as torch 2.11 printed it under unique_consecutive and nonzero (fixtures/oracle)
_COMPACT_INIT = ("void at_cuda_detail::cub::detail::scan::DeviceCompactInitKernel<at_cuda_detail::cub::{state}, {out}*>"
                 "(at_cuda_detail::cub::{state}, int, {out}*)")


def test_a_reduce_by_key_tile_state_is_a_run_length_encoding_not_a_selection(real_index_26):
    # Note [CUB tile states name the algorithm]: the tile state, not `Compact`, says what runs
    m = real_index_26.kernel(_COMPACT_INIT.format(state="ReduceByKeyScanTileState<long, int, true>", out="long"))
    assert m.library == "CUB" and m.family == "reduce by key"
    assert [s.symbol for s in m.library_calls] == ["at::cuda::cub::run_length_encode"]
    assert _ops(m, 1) == ["aten::unique_consecutive"], _ops(m, 5)
    assert "aten::nonzero" not in [h.op for h in m.hits], [h.op for h in m.hits]
    # a selection's tile state keeps the selection (nonzero's compaction)
    s = real_index_26.kernel(_COMPACT_INIT.format(state="ScanTileState<int, true>", out="int"))
    assert s.family == "selection"
    assert "aten::nonzero" in [h.op.split(".")[0] for h in s.hits[:3]], _ops(s, 5)


SEGMENT_MAX = ("void at_cuda_detail::cub::detail::reduce::DeviceSegmentedReduceKernel<at_cuda_detail::cub::detail::"
               "reduce::policy_hub<float, long, at::native::(anonymous namespace)::CustomMax>::Policy1000, float const*, "
               "float*, long const*, long const*, long, at::native::(anonymous namespace)::CustomMax, float, float>("
               "float const*, float*, long const*, long const*, at::native::(anonymous namespace)::CustomMax, float)")


def test_a_library_kernels_issuing_calls_rank_before_what_its_functor_spells(real_index_26):
    # Note [A library kernel's calls before names]: CustomMax spells `max`, by name only; segment_reduce
    # calls cub::DeviceSegmentedReduce::Reduce with it
    m = real_index_26.kernel(SEGMENT_MAX)
    assert m.library == "CUB"
    assert any(f.symbol.endswith("CustomMax") and f.loc.file.endswith("cuda/SegmentReduce.cu") for f in m.functors)
    assert m.hits[0].op == "aten::segment_reduce" and m.hits[0].step is not None
    assert m.hits[0].step.symbol == "cub::DeviceSegmentedReduce::Reduce"
    named = [h for h in m.hits if h.op == "aten::max"]
    assert named and named[0].step is None  # still listed, after the call path


# cuDNN's own kernels as torch 2.11 printed them under grid_sampler's cuDNN path (fixtures/oracle)
SAMPLER_BW = ("void cudnn::bilinear_sampler_bw_4d<float, float>(cudnnTensorStruct, float const*, cudnnTensorStruct, "
              "float*, cudnnTensorStruct, float const*, float const*, float*, float, float)")
SAMPLER_FW = ("void cudnn::bilinear_sampler_fw_4d<float, float>(cudnnTensorStruct, float const*, float const*, "
              "cudnnTensorStruct, float*)")


def test_a_library_kernel_of_no_family_is_issued_by_the_calls_sharing_its_words(real_index_26):
    # Note [A library kernel's words in its calls]: `sampler` is cudnnSpatialTfSampler*'s, and `bw` says backward
    bw = real_index_26.kernel(SAMPLER_BW)
    assert bw.library == "cuDNN" and bw.family == ""
    assert sorted(s.symbol for s in bw.library_calls) == ["cudnnSpatialTfSamplerBackward", "cudnnSpatialTfSamplerForward"]
    assert [h.op for h in bw.hits] == ["aten::cudnn_grid_sampler_backward", "aten::cudnn_grid_sampler"]
    fw = real_index_26.kernel(SAMPLER_FW)
    assert _ops(fw, 1) == ["aten::cudnn_grid_sampler"], _ops(fw, 3)


def test_a_name_sharing_no_word_with_its_library_keeps_every_call(real_index_26):
    # `scale`, `packed`: no cuDNN call ATen makes says them, so no call is dropped (Note [Issuing calls])
    m = real_index_26.kernel("void cudnn::engines_precompiled::scalePackedTensor_kernel<float, float>"
                             "(cudnnTensor4dStruct, float*, float)")
    assert m.library == "cuDNN" and len(m.library_calls) > 10
    # a kernel guessed to be a solver's keeps the guess's calls: `init` is no magma_init
    g = real_index_26.kernel("void kernel::init_scales_blocks_list<512l, 64l>(long, long*, long*, long, long**)")
    assert not all("magma_init" in s.symbol for s in g.library_calls) and len(g.library_calls) > 3
    assert _ops(g, 1)[0].startswith("aten::linalg_eig"), _ops(g, 3)


@pytest.mark.parametrize("name", ["Memcpy HtoD (Pageable -> Device)", "Memcpy DtoH (Device -> Pageable)",
                                  "Memcpy HtoD (Pinned -> Device)"])
def test_a_pageable_copy_is_the_general_copys_first(real_index_26, name):
    # Note [Pageable copies are the general copy's]: a user's CPU tensor is pageable; .item() stages
    # through pinned memory. copy_kernel_cuda's cudaMemcpyAsync says no direction (a variable). A copy
    # to the device is the general copy's pinned or not (calculate_mode's HtoD call is mode's alone)
    m = real_index_26.kernel(name)
    assert m.library == "CUDA runtime (copy engine)"
    top = [h.op for h in m.hits[:3]]
    assert top[0] in ("aten::copy", "aten::copy_"), top
    assert m.hits[0].step is not None and m.hits[0].step.symbol == "cudaMemcpyAsync"
    assert "aten::copy_" in [h.op for h in m.hits[:6]]
    assert not any(h.op.startswith("aten::mode") for h in m.hits[:3]), top


def test_a_pinned_copy_keeps_the_calls_that_say_its_direction_first(real_index_26):
    m = real_index_26.kernel("Memcpy DtoH (Device -> Pinned)")
    assert m.hits[0].op == "aten::_local_scalar_dense", [h.op for h in m.hits[:3]]
    assert m.hits[0].step.symbol == "at::cuda::memcpy_and_sync"


def test_a_trace_kernel_the_tree_lacks_is_one_line_naming_both_versions(real_index_26, tmp_path):
    # Note [Code of another version]: for a trace, the line also says what the trace records of its torch
    import json
    import pathlib

    from atenmap.resolve.versions import recorded_with
    from atenmap.trace.fromtrace import answer

    fixture = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "trace" / "h200_kineto_small.json"
    trace = json.loads(fixture.read_text())
    kernels = [e for e in trace["traceEvents"] if e.get("cat") == "kernel"]
    kernels[0]["name"] = "void at::native::(anonymous namespace)::frobnicate_quux_kernel<float, 4>(int)"
    path = tmp_path / "newer.json"
    path.write_text(json.dumps(trace))
    ans = answer(real_index_26, path)
    [ka] = [k for k in ans.kernels if "frobnicate" in k.name]
    lines = [n for n in ka.match.notes if "frobnicate_quux_kernel" in n]
    assert lines == [ka.match.version_note] and "\n" not in lines[0]
    assert "PyTorch 2.6" in lines[0] and lines[0].endswith("; the trace does not record which torch ran it")
    # a kernel the tree has gets no such line
    assert all(not k.match.version_note for k in ans.kernels if k is not ka)
    assert recorded_with("2.11.0+cu130") == "; the trace was recorded with torch 2.11.0+cu130"
    # the same name asked alone: the tree's version only
    alone = real_index_26.kernel(kernels[0]["name"])
    assert alone.version_note.startswith("no kernel named") and "trace" not in alone.version_note


def test_a_fills_library_groups_rank_by_their_familys_words(real_index_26):
    # CUB's radix sort clears its counters: its group's first operator is a sort (FAMILY_WORDS), not
    # embedding_dense_backward's sort of indices; ATen's own fill and the GEMM's workspace stay first
    m = real_index_26.kernel("Memset (Device)")
    top = [h.op for h in m.hits[:3]]
    assert top[0] == "aten::all" and top[1] in ("aten::mm", "aten::addmm"), top
    assert top[2].startswith("aten::sort"), top


def _scan(op: str) -> str:
    return ("void at_cuda_detail::cub::detail::scan::DeviceScanKernel<at_cuda_detail::cub::detail::scan::policy_hub<"
            f"float, float, float, unsigned int, std::{op}<float> >::Policy1000, float const*, float*, "
            f"at_cuda_detail::cub::ScanTileState<float, true>, std::{op}<float>, at_cuda_detail::cub::NullType, "
            "unsigned int, float, false, at_cuda_detail::cub::NullType>(float const*, float*, at_cuda_detail::cub::"
            f"ScanTileState<float, true>, int, std::{op}<float>, at_cuda_detail::cub::NullType, unsigned int)")


@pytest.mark.parametrize("functor, op", [("multiplies", "aten::cumprod"), ("plus", "aten::cumsum")])
def test_a_cub_scan_is_the_cumulative_op_of_its_functor(real_index_26, functor, op):
    # as torch 2.11 printed cumprod's scan (fixtures/oracle): std::multiplies makes it a cumulative product
    m = real_index_26.kernel(_scan(functor))
    assert m.library == "CUB" and m.family == "scan"
    assert m.hits[0].op == op, _ops(m, 3)


@pytest.mark.parametrize("ops", ["AbsMaxOps", "AbsMinOps"])
def test_a_walked_operator_ranks_before_what_the_functors_words_spell(real_index_26, ops):
    # as torch 2.11 printed linalg_vector_norm's inf-norm reduction (fixtures/oracle): `abs`/`max` are
    # spelled by the functor, by name only; the walk from it reaches the norm kernels that build it
    red = f"at::native::ReduceOp<float, at::native::{ops}<float, float, float>, unsigned int, float, 4, 4>"
    m = real_index_26.kernel(f"void at::native::reduce_kernel<512, 1, {red} >({red})")
    assert m.hits[0].op == "aten::linalg_vector_norm" and m.hits[0].step is not None, _ops(m, 3)
    named = [h for h in m.hits if h.step is None]
    assert named and all(m.hits.index(h) > 0 for h in named)


def test_a_function_of_an_anonymous_namespace_is_called_from_its_own_file_only(real_index_26):
    # UniqueCub.cu's internal compute_unique is not Unique.cu's (unique_dim's), though Unique.cu includes
    # UniqueCub.cuh: a .cu's anonymous namespace is its translation unit's alone
    m = real_index_26.kernel("void at::native::internal::(anonymous namespace)::adjacent_difference_kernel<float const*>"
                             "(long, float const*, int*)")
    ops = [h.op for h in m.hits]
    assert ops[0] == "aten::_unique" and "aten::unique_consecutive" in ops[:3], ops
    assert not any(o.startswith("aten::unique_dim") for o in ops), ops
    w = real_index_26.where("aten/src/ATen/native/cuda/UniqueCub.cu", function="compute_unique")
    assert not any("unique_dim" in o for o in w.operators), w.operators


@pytest.mark.parametrize("params, op", [
    ("float const*, float*, long*, int, int, int, int, int, int, long, long, long, long, long", "aten::adaptive_max_pool3d"),
    ("float const*, float*, long*, int, int, int, int, long, long, long", "aten::adaptive_max_pool2d"),
])
def test_kernels_of_one_name_are_told_apart_by_their_parameters(real_index_26, params, op):
    # Note [Kernels of one name told apart by their parameters]: AdaptiveMaxPooling2d.cu and 3d.cu each
    # define adaptivemaxpool in an anonymous namespace (10 and 14 parameters); torch 2.11 printed the 3-D one
    m = real_index_26.kernel(f"void at::native::(anonymous namespace)::adaptivemaxpool<float>({params})")
    dims = op[-2:]
    assert m.definition.loc.file.endswith(f"AdaptiveMaxPooling{dims}.cu")
    assert all(s.loc.file.endswith(f"AdaptiveMaxPooling{dims}.cu") for s in m.launches)
    assert m.hits[0].op == op, _ops(m, 3)


def test_a_method_s_callers_are_not_its_namesakes_callers(real_index_26):
    # Note [Member calls by name]: cuDNN's dropout kernel is issued under DropoutDescriptor::set
    # (Descriptors.h), whose name `set` other classes' methods share (TensorDescriptor::set in pooling,
    # grid sampling and convolution; `wdesc.set(weight, memory_format, 0)` takes a number for set's Tensor):
    # only the RNN and dropout-state operators issue it
    m = real_index_26.kernel("void cudnn::detail::dropout_fp_kernel<float>(cudnn::detail::dropout_params)")
    ops = _ops(m, 12)
    assert ops[:2] == ["aten::_cudnn_rnn", "aten::_cudnn_init_dropout_state"], ops
    assert not any(w in o for o in ops for w in ("pool", "grid", "convolution", "affine")), ops
