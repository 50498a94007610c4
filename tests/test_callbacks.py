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


def test_conditions_of_else_if_one_line_and_nested_ifs():
    # the branch a call sits under, whatever the spelling: `} else if`, an if without braces, ifs nested
    body = """  if (std::is_same_v<DT, float> && cc >= 80) {
    t_f32(cb, cc);
  } else if (std::is_same_v<DT, cutlass::half_t>) {
    t_f16(cb, cc);
  } else {
    t_other(cb, cc);
  }
  if (std::is_same_v<DT, cutlass::bfloat16_t>) t_bf16(cb, cc);
  if (std::is_same_v<DT, float>) {
    if (cc >= 75) {
      t_f32_75(cb, cc);
    }
    t_f32_any(cb, cc);
  }""".split("\n")
    got = {name: cond for name, _line, cond, _how in callbacks.handed(body, 1, "cb", 1)}
    assert got == {"t_f32": "std::is_same_v<DT, float> && cc >= 80", "t_f16": "std::is_same_v<DT, cutlass::half_t>",
                   "t_other": "", "t_bf16": "std::is_same_v<DT, cutlass::bfloat16_t>",
                   "t_f32_75": "(std::is_same_v<DT, float>) && (cc >= 75)", "t_f32_any": "std::is_same_v<DT, float>"}
    assert callbacks.table_rank(got["t_f32"]) == (0, -80)  # `cc >= 80` is a floor too
    assert callbacks.table_rank(got["t_f32"]) < callbacks.table_rank(got["t_f32_75"]) < callbacks.table_rank(got["t_f16"])


def test_only_the_open_lambda_of_the_launch_s_function():
    lines = """void one() {
  auto pick = [&](auto kernel_fn) {
    use(kernel_fn);
  };
  auto launch =
      [&](auto _k, auto kernel_fn) {
    kernel_fn<<<1, 1>>>(p);
  };
  dispatch_a<float>(launch, cc);
}
void two() {
  auto launch = [&](auto _k, auto kernel_fn) { kernel_fn<<<1, 1>>>(p); };
  dispatch_b<float>(launch, cc);
}""".split("\n")
    # a head split over two lines; `pick` takes the name but closed before the launch
    assert callbacks.lambda_of(lines, 7, "kernel_fn") == ("launch", 1, 5)
    # the calls that pass it, up to the end of its function, not two()'s lambda of the same name
    assert callbacks.calls_passing(lines, 6, "launch") == [("dispatch_a", 0, 9)]
    # a lambda on the launch's own line
    assert callbacks.lambda_of(lines, 12, "kernel_fn") == ("launch", 1, 12)
