"""Issue 33, lines and extents: a function ends where its body ends (Note [A function ends where its
body ends] in extract/definitions.py) and a launch passed to a file's own macro is reported once,
at its ``<<<`` line (Note [Launches passed to a macro] in extract/macro_uses.py). Hand-written
snippets in the shape of DepthwiseConv3d.cu and Loss.cu."""
from __future__ import annotations

from atenmap.extract.parse import extract_file

# A forward function ending in uses of its own macros without semicolons (tree-sitter stretches its
# node), then a #define whose body launches a kernel, then the function that uses that macro.
MACRO_TAIL = b"""\
namespace at::native {
#define FWD_SPEC(k)                      \\
  if (size == (k)) {                     \\
    fwd_kernel<k><<<grid, block>>>(x);   \\
    return;                              \\
  }

Tensor forward_cuda(const Tensor& x) {
  int size = 3;
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "f", [&] {
    FWD_SPEC(3)
    FWD_SPEC(5)
  });
  return x;
}

#undef FWD_SPEC
#define BWD_SPEC(k)                      \\
  if (size == (k)) {                     \\
    bwd_kernel<k><<<grid, block>>>(x);   \\
    return;                              \\
  }

void backward_cuda_out(const Tensor& x) {
  int size = 3;
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "b", [&] {
    BWD_SPEC(3)
    BWD_SPEC(5)
  });
}
}
"""

# A file's own dispatch macro pasting its lambda once per index type.
PASTED_LAMBDA = b"""\
namespace at::native {
#define MY_INDEX_TYPES(TYPE, NAME, ...)                 \\
  AT_DISPATCH_SWITCH(TYPE, NAME,                        \\
      AT_PRIVATE_CASE_TYPE_USING_HINT(at::ScalarType::Byte, index_t, __VA_ARGS__) \\
      AT_PRIVATE_CASE_TYPE_USING_HINT(at::ScalarType::Long, index_t, __VA_ARGS__))

void loss_template(const Tensor& target) {
  MY_INDEX_TYPES(
      target.scalar_type(),
      "loss_index",
      [&] {
        loss_kernel<index_t>
            <<<1, 256, 0, stream>>>(target.data_ptr<index_t>());
      });
}
}
"""


def _facts(src: bytes, kind: str):
    _err, facts = extract_file(src, "cuda")
    return facts, [f for f in facts if f.kind == kind]


def test_function_ends_at_its_body_and_swallowed_functions_are_found():
    facts, functions = _facts(MACRO_TAIL, "function")
    by_name = {f.name: f for f in functions}
    forward = by_name["forward_cuda"]
    assert (forward.line, forward.end_line) == (8, 15)
    assert "backward_cuda_out" in by_name
    backward = by_name["backward_cuda_out"]
    for launch in (f for f in facts if f.kind == "launch" and f.name == "bwd_kernel"):
        assert facts[launch.scope].name == "backward_cuda_out", launch
        assert backward.line <= launch.line <= backward.end_line
    assert all(facts[f.scope].name == "forward_cuda" for f in facts if f.kind == "launch" and f.name == "fwd_kernel")


def test_launch_passed_to_a_macro_is_reported_once_at_its_launch_line():
    _facts_, launches = _facts(PASTED_LAMBDA, "launch")
    assert [(f.name, f.line) for f in launches] == [("loss_kernel", 12)]  # the launch statement, not the macro use (8)
