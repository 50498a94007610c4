"""Note [A copy of a view is strided] (resolve/strided.py): which copies copy a view that changes
strides, read from the text of the function that makes them."""
from __future__ import annotations

from atenmap.model import Location, Operator, OperatorName
from atenmap.resolve.strided import (KEEPS_LAYOUT, converts, copies_view, returns_alias, statement_at,
                                     strided_views, view_copies)

VIEWS = frozenset({"expand", "diagonal", "permute", "t", "expand_as", "unfold"})


def test_a_view_copied_through_a_variable_set_once():
    function = "at::Tensor expand_copy_symint(const at::Tensor & self, c10::SymIntArrayRef size, bool implicit) {\n" \
               "  auto output = at::_ops::expand::call(self, size, implicit);\n"
    assert copies_view("clone", "    return output.clone(/*memory_format=*/at::MemoryFormat::Contiguous);", function, VIEWS)


def test_a_copy_into_a_view_and_a_view_written_at_the_call():
    function = "Tensor diag_embed(const Tensor& self) {\n  auto result = at::zeros(sizes, self.options());\n" \
               "  auto diag = result.diagonal(offset, dim1, dim2);\n"
    assert copies_view("copy_", "  diag.copy_(self);\n  return result;", function, VIEWS)
    assert copies_view("copy_", "  urtensor.copy_(xtensor.expand_as(urtensor));", "", VIEWS)
    assert copies_view("contiguous", "  return self.permute({1, 0}).contiguous();", "", VIEWS)
    assert copies_view("clone", "  return at::clone(self.t());", "", VIEWS)


def test_what_is_not_a_copy_of_a_strided_view():
    # a fresh tensor, a view that keeps the layout, and a variable last set in a branch (which view
    # the copy sees is not known)
    assert not copies_view("clone", "  return self.clone();", "Tensor f(const Tensor& self) {\n", VIEWS)
    assert not copies_view("clone", "  return out.clone();", "  auto out = self.view({-1});\n", VIEWS)
    branch = "Tensor f(const Tensor& result, bool b) {\n  Tensor u = at::alias(result);\n  if (b) {\n" \
             "    u = u.unfold(0, 2, 2);\n  }\n"
    assert not copies_view("clone", "  return u.clone();", branch, VIEWS)


def test_a_view_copied_through_the_last_assignment_in_the_body():
    # repeat_interleave.self_int: `input = input.unsqueeze(dim + 1); ... input = input.expand_symint(s);`
    # then `input.clone(...)`: the last assignment, in the body itself, is what the clone copies
    function = "Tensor repeat_interleave_symint(const Tensor& self, c10::SymInt repeats) {\n" \
               "  Tensor input = dim_opt ? self : self.flatten();\n  input = input.unsqueeze(dim + 1);\n" \
               "  if (output_size) {\n    check();\n  }\n  input = input.expand_symint(expand_shape);\n"
    assert copies_view("clone", "  return input.clone(at::MemoryFormat::Contiguous).flatten(dim, dim + 1);",
                       function, VIEWS)


def test_strided_views_from_schemas():
    def op(name, schema):
        return Operator(OperatorName(name, ""), schema, Location("native_functions.yaml", 1))
    ops = [op("expand", "expand(Tensor(a) self, SymInt[] size, *, bool implicit=False) -> Tensor(a)"),
           op("view", "view(Tensor(a) self, SymInt[] size) -> Tensor(a)"),
           op("add_", "add_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)"),
           op("mul", "mul.Tensor(Tensor self, Tensor other) -> Tensor")]
    assert strided_views(ops) == {"expand"}
    assert returns_alias(ops[1].schema) and "view" in KEEPS_LAYOUT


def test_views_that_copy_are_read_from_the_call():
    # Note [Views that copy]: a strided view made contiguous, a `to` given a constant dtype
    lines = [b"  auto input_reshaped = self.view({b, groups, oc, -1});", b"  Tensor output_tensor =",
             b"      input_reshaped.permute({0, 2, 1, 3})", b"      .contiguous()", b"      .reshape(self.sizes());"]
    statement = statement_at(lines, 4)
    assert statement.lstrip().startswith("Tensor output_tensor") and "auto input_reshaped" not in statement
    assert view_copies("contiguous", statement, "", VIEWS)
    assert view_copies("to", "  return self.to(kComplexHalf, false, false, memory_format);", "", VIEWS)
    assert converts("to", "  return self.to(at::ScalarType::Float);")
    assert not view_copies("to", "  return self.to(options);", "", VIEWS)  # the options may say nothing new
    assert not view_copies("contiguous", "  return self.contiguous();", "", VIEWS)  # a fresh tensor: itself


def test_an_operand_given_a_dimension_of_size_one_is_broadcast():
    # Note [Broadcast operands are strided]: outer's column times a row
    from atenmap.resolve.strided import broadcasts

    assert broadcasts("  return self.reshape({self.size(0), 1}) * vec2;")
    assert broadcasts("  return a.unsqueeze(-1) + b;")
    assert broadcasts("  auto y = x.view_symint({1, n}) - z;")
    assert not broadcasts("  return self.reshape({n, m}) * other;")  # no size-1 dimension written
    assert not broadcasts("  return self.view({-1}) * 2;")


def test_the_last_assignment_must_be_on_every_path():
    # strided._last_set: an unbraced if's or else's body is not every path; a "{" in a message is no block
    head = "Tensor f(const Tensor& self, bool b) {\n  Tensor u = at::alias(self);\n"
    assert not copies_view("clone", "  return u.clone();", head + "  if (b) u = u.t();\n", VIEWS)
    assert not copies_view("clone", "  return u.clone();", head + "  if (b) {}\n  else u = u.t();\n", VIEWS)
    assert copies_view("clone", "  return u.clone();", head + '  TORCH_CHECK(b, "{");\n  u = u.t();\n', VIEWS)


def test_an_iterator_built_on_broadcast_inputs():
    # Note [An iterator built on broadcast inputs]: group_norm's GroupNorm1dForward builds the iterator
    # its gpu_kernel runs from `mean.view({N, G, 1})`; addr's native passes its stub an iterator a
    # same-file helper builds from `vec1.reshape({vec1_size0, 1})`
    from atenmap.resolve.strided import builds_broadcast_iterator, iterator_broadcasts

    direct = ("  if (gamma.defined()) {\n    auto iter = TensorIteratorConfig()\n        .add_owned_output(Y.view({N, G, D}))\n"
              "        .add_owned_const_input(X.view({N, G, D}))\n        .add_owned_input(mean.view({N, G, 1}))\n"
              "        .build();\n")
    assert iterator_broadcasts("    gpu_kernel(iter, [] GPU_LAMBDA(T x, T m) -> T {", direct, lambda name: None)
    helper = ("static TensorIterator build_addr_iter(Tensor& result, const Tensor& self, const Tensor& vec1) {\n"
              "  auto iter = TensorIteratorConfig()\n    .add_output(result)\n"
              "    .add_owned_const_input(vec1.reshape({vec1_size0, 1}))\n    .build();\n  return iter;\n}\n")
    bodies = {"build_addr_iter": helper}
    native = "  Tensor result;\n  auto iter = build_addr_iter(result, self, vec1, vec2);\n  check_addr_scalar(iter.dtype(), beta);\n"
    assert iterator_broadcasts("  addr_stub(iter.device_type(), iter, beta, alpha);", native, bodies.get)
    # a size-1 view of the output only, an input of full size, or an iterator the call does not name
    assert not builds_broadcast_iterator("TensorIteratorConfig().add_output(r.view({N, 1})).add_input(x).build()")
    assert not builds_broadcast_iterator("TensorIteratorConfig().add_output(r).add_const_input(x.view({N, G, D})).build()")
    assert not iterator_broadcasts("  other_stub(kCUDA, it2);", direct, lambda name: None)
    # a helper that builds no iterator, or one the file does not define
    assert not iterator_broadcasts("  addr_stub(iter.device_type(), iter);", native, {"build_addr_iter": "return x;"}.get)
    assert not iterator_broadcasts("  addr_stub(iter.device_type(), iter);", native, lambda name: None)
