"""Chains on the fixture tree: each ATen pattern followed to its kernel, launch or library call."""
from __future__ import annotations

import pytest

from atenmap.errors import UnknownOperator
from atenmap.resolve.lookups import LookupObserver, LookupStep, Pick, PickRule


def steps(chain, key):
    kc = next(k for k in chain.keys if k.key == key)
    return list(kc.walk())


def roles(chain, key):
    return [(s.role, s.symbol) for s in steps(chain, key)]


def find(chain, key, role, symbol_part=""):
    hits = [s for s in steps(chain, key) if s.role == role and symbol_part in s.symbol]
    assert hits, f"no {role} {symbol_part!r} under {key}: {roles(chain, key)}"
    return hits[0]


def test_structured_op_cuda_reaches_launch(mini_index):
    ch = mini_index.chain("mul.out", keys=["CUDA"])
    assert [k.key for k in ch.keys] == ["CUDA"]
    assert find(ch, "CUDA", "yaml").line == 30
    assert find(ch, "CUDA", "meta", "TORCH_META_FUNC2(mul, Tensor)").file == "aten/src/ATen/native/BinaryOps.cpp"
    native = find(ch, "CUDA", "native", "TORCH_IMPL_FUNC(mul_out)")
    assert (native.file, native.line) == ("aten/src/ATen/native/BinaryOps.cpp", 46)
    assert find(ch, "CUDA", "stub_call", "mul_stub").line == 50
    assert find(ch, "CUDA", "stub_declare").file.endswith("BinaryOps.h")
    reg = find(ch, "CUDA", "register")
    assert reg.file == "aten/src/ATen/native/cuda/BinaryMulKernel.cu" and reg.line == 26
    assert find(ch, "CUDA", "kernel", "mul_kernel_cuda").line == 16
    names = [s.symbol for s in steps(ch, "CUDA") if s.role == "call"]
    assert names == ["at::native::opmath_symmetric_gpu_kernel_with_scalars", "at::native::gpu_kernel",
                     "at::native::gpu_kernel_impl", "at::native::launch_vectorized_kernel",
                     "at::native::MulFunctor::operator()"]
    functor = find(ch, "CUDA", "call", "MulFunctor::operator()")
    assert functor.line == 11 and "functor" in functor.detail
    launch = find(ch, "CUDA", "launch")
    assert (launch.file, launch.line) == ("aten/src/ATen/native/cuda/CUDALoops.cuh", 18)
    assert "vectorized_elementwise_kernel<<<grid, num_threads(), 0, stream>>>" == launch.symbol
    assert "CUDALoops.cuh" not in launch.detail and "line 7" in launch.detail


def test_cpu_key_picks_cpu_registration_only(mini_index):
    ch = mini_index.chain("mul.out", keys=["CPU"])
    regs = [s for s in steps(ch, "CPU") if s.role == "register"]
    assert [r.file for r in regs] == ["aten/src/ATen/native/cpu/BinaryOpsKernel.cpp"]
    assert find(ch, "CPU", "call", "cpu_kernel_vec").file == "aten/src/ATen/native/cpu/Loops.h"
    assert not [s for s in steps(ch, "CPU") if s.role == "launch"]


def test_default_keys_are_every_key_with_a_kernel(mini_index):
    ch = mini_index.chain("mul.out")
    assert [k.key for k in ch.keys] == ["CPU", "CUDA"]


def test_macro_made_impl_and_kernel(mini_index):
    ch = mini_index.chain("exp.out", keys=["CPU"])
    native = find(ch, "CPU", "native", "TORCH_IMPL_FUNC(exp_out)")
    assert native.line == 21 and "CREATE_UNARY_TORCH_IMPL_FUNC" in native.detail
    assert find(ch, "CPU", "meta", "TORCH_META_FUNC(exp)").line == 10
    reg = find(ch, "CPU", "register", "ALSO_REGISTER_AVX512_DISPATCH")
    assert reg.line == 25 and "STATIC_IMPLEMENT_COMPLEX_KERNEL_WITH_AVX512" in reg.detail
    kernel = find(ch, "CPU", "kernel", "exp_kernel")
    assert kernel.symbol == "at::native::CPU_CAPABILITY::exp_kernel" and kernel.line == 25


def test_library_calls_end_the_chain(mini_index):
    ch = mini_index.chain("mm.out")
    lib = find(ch, "CUDA", "library", "at::cuda::blas::gemm")
    assert lib.file == "aten/src/ATen/native/cuda/Blas.cpp" and lib.line == 11 and "cuBLAS" in lib.detail
    assert find(ch, "CUDA", "helper", "addmm_out_cuda_impl").line == 7
    cpu = find(ch, "CPU", "library", "cpublas::gemm")
    assert cpu.file == "aten/src/ATen/native/LinearAlgebra.cpp"


def test_composite_lists_the_operators_it_calls(mini_index):
    ch = mini_index.chain("linear")
    assert [k.key for k in ch.keys] == ["CompositeImplicitAutograd"]
    native = find(ch, "CompositeImplicitAutograd", "native")
    assert native.symbol == "at::native::linear"  # not at::native::xnnpack::linear
    ops = {s.symbol for s in steps(ch, "CompositeImplicitAutograd") if s.role == "op_call"}
    assert ops == {"aten::addmm", "aten::t"}  # matmul is no operator in the fixture yaml
    assert find(ch, "CompositeImplicitAutograd", "helper", "_flatten_nd_linear").line == 4


def test_structured_delegate_goes_to_out_op(mini_index):
    ch = mini_index.chain("mul.Tensor", keys=["CUDA"])
    top = ch.keys[0].steps[0]
    assert top.role == "yaml" and top.symbol == "mul.Tensor"
    assert top.children[0].role == "delegate" and top.children[0].symbol == "mul.out"
    find(ch, "CUDA", "launch")


def test_ufunc_op_points_at_generated_code_and_inner_loop(mini_index):
    ch = mini_index.chain("add.out", keys=["CUDA"])
    gen = find(ch, "CUDA", "generated", "ufunc_add_CUDA")
    assert gen.generated and gen.file is None and "UfuncCUDA_add.cu" in gen.detail
    inner = find(ch, "CUDA", "kernel", "ufunc::add")
    assert inner.file == "aten/src/ATen/native/ufunc/add.h" and inner.line == 6
    assert find(ch, "CUDA", "stub_call", "add_stub")
    assert any("add_stub" in w for w in ch.warnings)


def test_sub_runs_through_add_stub(mini_index):
    ch = mini_index.chain("sub.out", keys=["CPU"])
    assert find(ch, "CPU", "stub_call", "add_stub").line == 41


def test_same_stub_name_in_other_namespace_is_not_mixed_in(mini_index):
    ch = mini_index.chain("copy_", keys=["CPU"])
    regs = [s.file for s in steps(ch, "CPU") if s.role == "register"]
    assert regs == ["aten/src/ATen/native/cpu/CopyKernel.cpp"]
    declares = [s.file for s in steps(ch, "CPU") if s.role == "stub_declare"]
    assert declares == ["aten/src/ATen/native/Copy.h"]


def test_same_kernel_name_on_cpu_and_cuda(mini_index):
    cuda = mini_index.chain("normal_", keys=["CUDA"])
    k = find(cuda, "CUDA", "kernel", "normal_kernel")
    assert k.file == "aten/src/ATen/native/cuda/DistributionNormal.cu"
    assert find(cuda, "CUDA", "launch", "normal_fill_kernel").line == 7
    cpu = mini_index.chain("normal_", keys=["CPU"])
    assert find(cpu, "CPU", "kernel", "normal_kernel").file == "aten/src/ATen/native/cpu/DistributionKernels.cpp"


def test_json_shape(mini_index):
    d = mini_index.chain("mul.out", keys=["CUDA"]).to_dict()
    assert set(d) == {"op", "schema", "yaml", "source", "python", "keys", "generated_root", "warnings", "runs"}
    assert d["op"] == "mul.out" and d["yaml"] == {"file": "aten/src/ATen/native/native_functions.yaml", "line": 30}
    assert d["source"]["version"] == "2.6.0a0+fixture"
    step = d["keys"][0]["steps"][0]
    assert set(step) == {"role", "symbol", "file", "line", "detail", "generated", "children"}


def test_unknown_and_ambiguous_operators(mini_index):
    with pytest.raises(UnknownOperator, match="did you mean mul.out"):
        mini_index.operator("mul.ot")
    found = mini_index.lookup("add")  # a bare overloaded name: the overload a Python call reaches
    assert str(found.operator.name) == "add.Tensor" and found.others == ("add.out",) and found.picked
    assert str(mini_index.operator("aten::exp").name) == "exp"


def test_missing_key_is_a_warning(mini_index):
    ch = mini_index.chain("mul.out", keys=["MPS"])
    assert ch.keys == () and any("no MPS kernel" in w for w in ch.warnings)


def test_backend_key_falls_back_to_the_composite_kernel(mini_index):
    ch = mini_index.chain("linear", keys=["cuda"])
    assert [k.key for k in ch.keys] == ["CUDA"]
    assert any("CUDA runs its CompositeImplicitAutograd kernel" in w for w in ch.warnings)
    assert find(ch, "CUDA", "native").symbol == "at::native::linear"


def test_native_is_the_definition_the_wrapper_can_call(mini_index):
    """Note [Native overload selection]: anonymous-namespace, static and __device__ functions named
    max, and max.other's two-parameter max, are not aten::max's native function."""
    for key in ("CPU", "CUDA"):
        ch = mini_index.chain("max", keys=[key])
        natives = [(s.file, s.line) for s in steps(ch, key) if s.role == "native"]
        assert natives == [("aten/src/ATen/native/ReduceAllOps.cpp", 10)], key
        assert not any("definitions named max" in w for w in ch.warnings)
    ch = mini_index.chain("max", keys=["CUDA"])
    launch = find(ch, "CUDA", "launch", "max_all_kernel")
    assert (launch.file, launch.line) == ("aten/src/ATen/native/cuda/AveragePool2d.cu", 30)


def test_launcher_object_methods_are_followed(mini_index):
    """Note [Launcher objects]: run_launcher<...>(..., KthValueLauncher(k)) calls l.template launch<...>()."""
    ch = mini_index.chain("kthvalue.values", keys=["CUDA"])
    obj = find(ch, "CUDA", "helper", "KthValueLauncher")
    assert (obj.file, obj.line) == ("aten/src/ATen/native/cuda/Sorting.cu", 22)
    assert "object made here and passed on" in obj.detail and "Sorting.cu:43" in obj.detail
    method = find(ch, "CUDA", "helper", "KthValueLauncher::launch")
    assert method.line == 28 and "method of KthValueLauncher" in method.detail
    launch = find(ch, "CUDA", "launch", "gatherKthValue")
    assert launch.line == 29
    assert not [s for s in steps(ch, "CUDA") if "run_launcher" in s.symbol]  # leads nowhere by itself


def test_braced_sorter_object_and_its_comparator(mini_index):
    ch = mini_index.chain("topk.values", keys=["CUDA"])
    find(ch, "CUDA", "helper", "at::native::sortKeyValueInplace")
    sorter = find(ch, "CUDA", "helper", "SmallBitonicSort::sort")
    assert sorter.line == 56
    assert find(ch, "CUDA", "launch", "bitonicSortKVInPlace").line == 57
    assert find(ch, "CUDA", "helper", "LTOp::operator()").line == 17


def test_shared_native_helper_that_dispatches_is_followed(mini_index):
    """Note [Shared native helpers]: at::native::_fft_fill_with_conjugate_symmetry_ (another file,
    calls a stub) is shown; at::native::_fft_check_sizes (another file, no stub) is not."""
    ch = mini_index.chain("_fft_r2c", keys=["CUDA"])
    helper = find(ch, "CUDA", "helper", "_fft_fill_with_conjugate_symmetry_")
    assert (helper.file, helper.line) == ("aten/src/ATen/native/SpectralOps.cpp", 7)
    assert find(ch, "CUDA", "stub_call", "fft_fill_with_conjugate_symmetry_stub").line == 9
    launch = find(ch, "CUDA", "launch", "_fft_conjugate_copy_kernel")
    assert (launch.file, launch.line) == ("aten/src/ATen/native/cuda/SpectralOps.cu", 11)
    assert not [s for s in steps(ch, "CUDA") if "_fft_check_sizes" in s.symbol]


def test_launch_through_a_local_function_pointer(mini_index):
    """Note [Launches through a variable]: impl_fptr<<<...>>> launches cdist_kernel_cuda_impl, with
    the template arguments of its assignments (dists<scalar_t>::zero) shown."""
    ch = mini_index.chain("_cdist_forward", keys=["CUDA"])
    launch = find(ch, "CUDA", "launch", "cdist_kernel_cuda_impl")
    assert (launch.file, launch.line) == ("aten/src/ATen/native/cuda/DistanceKernel.cu", 28)
    assert "through the variable impl_fptr" in launch.detail and "__global__ cdist_kernel_cuda_impl at line 19" in launch.detail
    zero = find(ch, "CUDA", "call", "dists::zero")
    assert (zero.file, zero.line) == ("aten/src/ATen/native/cuda/DistanceKernel.cu", 10)
    kernel = mini_index.kernel("pytorch_flash::flash_fwd_kernel<Traits, true, false>")
    assert (kernel.definition.file, kernel.definition.line) == (
        "aten/src/ATen/native/transformers/cuda/flash_attn/flash_fwd_launch_template.h", 12)


def test_explicit_specializations_in_other_files(mini_index):
    """Note [Specializations in other files]: run_mha_fwd_<elem_type, kHeadDim> has only explicit
    specializations, one per file; the chain goes through them to the launch."""
    ch = mini_index.chain("_flash_attention_forward", keys=["CUDA"])
    specs = [s for s in steps(ch, "CUDA") if s.symbol == "pytorch_flash::run_mha_fwd_"]
    assert [(s.file.rsplit("/", 1)[-1], s.line) for s in specs] == [
        ("flash_fwd_hdim128_bf16_sm80.cu", 6), ("flash_fwd_hdim128_fp16_sm80.cu", 6), ("flash_fwd_hdim64_fp16_sm80.cu", 6)]
    launch = find(ch, "CUDA", "launch", "flash_fwd_kernel")
    assert (launch.file, launch.line) == (
        "aten/src/ATen/native/transformers/cuda/flash_attn/flash_fwd_launch_template.h", 21)
    assert "through the variable kernel" in launch.detail


class _Log(LookupObserver):
    """A lookup observer that keeps every event (Note [Lookups told to an observer] in resolve/lookups.py);
    the resolutions of names in ``drop`` answer nothing."""

    def __init__(self, drop=()):
        self.drop = set(drop)
        self.found_, self.asked_, self.picked_, self.nothing = [], [], [], []

    def found(self, name, kinds, rows, step, suffix=""):
        self.found_.append((name, tuple(kinds), step, suffix, tuple(r.file for r in rows)))

    def asked(self, name, kinds, answer, step):
        self.asked_.append((name, tuple(kinds), answer, step))

    def picked(self, name, site_file, pick, count, kinds):
        self.picked_.append((name, site_file, pick, count, tuple(kinds)))
        return name not in self.drop

    def runs_nothing(self, operator, key):
        self.nothing.append((operator, key))


def test_a_lookup_observer_is_told_each_lookup_with_its_step_and_rule(mini_index):
    log = _Log()
    ch = mini_index.chain("mul.out", keys=["CUDA"], observer=log)
    assert ch == mini_index.chain("mul.out", keys=["CUDA"])  # an observer that keeps every answer changes nothing
    kernel, loops = "aten/src/ATen/native/cuda/BinaryMulKernel.cu", "aten/src/ATen/native/cuda/Loops.cuh"
    # _defs resolves the registered kernel in the registration's file, a loop helper by include distance
    assert ("mul_kernel_cuda", kernel, Pick(PickRule.SAME_FILE, 0), 1, ("function", "global")) in log.picked_
    assert ("gpu_kernel_impl", loops, Pick(PickRule.INCLUDED, 1), 1, ("function", "global")) in log.picked_
    assert ("mul_out", None, Pick(PickRule.NO_SITE), 1, ("impl_func",)) in log.picked_  # the structured native
    assert ("operator()", kernel, Pick(PickRule.SAME_FILE, 0), 1, ("function",)) in log.picked_  # MulFunctor's
    # the index's answers, with the step that asked: _defs, or a step asking directly (the stub, the meta function)
    assert ("mul_kernel_cuda", ("function", "global"), LookupStep.DEFS, "", (kernel,)) in log.found_
    assert ("operator()", ("function",), LookupStep.DEFS, "::MulFunctor::operator()", (kernel,)) in log.found_
    assert ("mul_stub", ("declare_dispatch",), LookupStep.DIRECT, "", ("aten/src/ATen/native/BinaryOps.h",)) \
        in log.found_
    assert ("mul_Tensor", ("meta_func",), LookupStep.DIRECT, "", ("aten/src/ATen/native/BinaryOps.cpp",)) in log.found_
    # a template argument asked about as a class (_template_functors), and no class found
    assert ("opmath_t", ("class",), False, LookupStep.TEMPLATE_ARGUMENT) in log.asked_
    assert ("MulFunctor", ("class",), True, LookupStep.DIRECT) in log.asked_
    # each question is told once per chain (the memo answers repeats); every resolution is told
    assert len({e[:4] for e in log.found_}) == len(log.found_)
    assert [e for e in log.picked_ if e[0] == "gpu_kernel"] == [("gpu_kernel", loops, Pick(PickRule.SAME_FILE, 0), 1,
                                                                 ("function", "global"))] * 2
    assert log.nothing == []


def test_a_lookup_the_observer_does_not_keep_answers_nothing(mini_index):
    """``picked`` returning False makes _defs answer nothing: the step is missing, not replaced."""
    full = mini_index.chain("mul.out", keys=["CUDA"])
    cut = mini_index.chain("mul.out", keys=["CUDA"], observer=_Log(drop={"mul_kernel_cuda"}))
    assert find(full, "CUDA", "kernel", "mul_kernel_cuda")
    assert not any(s.role in ("kernel", "launch") for s in steps(cut, "CUDA"))  # nor what it led to
    register = find(cut, "CUDA", "register", "mul_kernel_cuda")  # the registration names it, alone
    assert register.children == ()
    shown = [(s.role, s.symbol) for s in steps(cut, "CUDA")]
    assert shown == [(s.role, s.symbol) for s in steps(full, "CUDA") if (s.role, s.symbol) in shown]
