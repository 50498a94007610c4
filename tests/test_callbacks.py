"""Note [Kernels passed to a callback] (resolve/callbacks.py): the text readers on the shapes of
mem-efficient attention's launcher, dispatcher and tables; the chain on the real tree:
test_first_realtree.py."""
from __future__ import annotations

from atenmap.resolve import callbacks

LAUNCHER = """\
  auto launchKernel = [&](auto _k, auto kernel_fn) {
    using Kernel = decltype(_k);
    if (kernel_launched) {
      return;
    }
    auto checkArch = [&]() {
      return true;
    };
    kernel_fn<<<blocks, threads, smem_bytes, stream>>>(p);
  };
  DISPATCH_TYPES(query, ([&]() {
                   dispatch_mini<scalar_t>(launchKernel, computeCapability);
                 }));
""".split("\n")

DISPATCHER = """\
void dispatch_mini(T cb, int cc = 0) {
    if (std::is_same_v<DT, cutlass::half_t> && 80 <= cc && cc < 100) {
        dispatch_mini_f16_sm80(cb, cc);
    }
    if (std::is_same_v<DT, float> && 50 <= cc && cc < 70) {
        dispatch_mini_f32_sm50(cb, cc);
    }
    if (std::is_same_v<DT, float> && 80 <= cc && cc < 100) {
        dispatch_mini_f32_sm80(cb, cc);
    }
}""".split("\n")

TABLE = """\
template <typename T> void dispatch_mini_f32_sm80(T cb, int cc) {
    cb(AttentionKernel<float, cutlass::arch::Sm80, true, 64, 64, 64, true, true>(), fmha_mini_f32_64x64_sm80);
    cb(AttentionKernel<float, cutlass::arch::Sm80, true, 32, 128, 65536, true, true>(), fmha_mini_f32_32x128_sm80);
}""".split("\n")


def test_the_launch_is_a_parameter_of_the_lambda_around_it():
    # the nested lambda (checkArch) is passed over; the launcher's head is line 1
    assert callbacks.lambda_of(LAUNCHER, 9, "kernel_fn") == ("launchKernel", 1, 1)
    assert callbacks.lambda_of(LAUNCHER, 9, "other") is None
    assert callbacks.calls_passing(LAUNCHER, 2, "launchKernel") == [("dispatch_mini", 0, 12)]


def test_what_the_dispatcher_and_its_tables_hand_the_callback():
    assert callbacks.parameter_names("T cb, int cc = 0") == ["cb", "cc"]
    passed = callbacks.handed(DISPATCHER[1:], 2, "cb", 1)
    assert [(name, how) for name, _line, _cond, how in passed] == [
        ("dispatch_mini_f16_sm80", "pass:0"), ("dispatch_mini_f32_sm50", "pass:0"), ("dispatch_mini_f32_sm80", "pass:0")]
    assert passed[2][2] == "std::is_same_v<DT, float> && 80 <= cc && cc < 100"
    # the kernel is the callback's second argument, whatever the commas of the first's template arguments
    assert [(name, line) for name, line, _c, _h in callbacks.handed(TABLE[1:], 2, "cb", 1)] == [
        ("fmha_mini_f32_64x64_sm80", 2), ("fmha_mini_f32_32x128_sm80", 3)]


def test_the_table_a_float32_call_on_a_current_gpu_takes_ranks_first():
    ranks = [callbacks.table_rank(cond) for _n, _l, cond, _h in callbacks.handed(DISPATCHER[1:], 2, "cb", 1)]
    f16_sm80, f32_sm50, f32_sm80 = ranks
    assert f32_sm80 < f32_sm50 < f16_sm80
    assert callbacks.table_rank("std::is_same_v<DT, cutlass::bfloat16_t> && 80 <= cc") > f16_sm80
