"""Note [A branch on a selector's value] (resolve/selectors.py): the branches of an ``if`` chain on a
backend selector's value, read from text."""
from __future__ import annotations

from atenmap.resolve.selectors import (call_in_selected_branch, constraint, defines, earlier_in_chain, equals,
                                       place, returned, set_from_call)

FUNCTION = b"""std::tuple<Tensor, Tensor> bn_cuda(const Tensor& input) {
  BatchNormBackend backend = _select_batch_norm_backend(input, /*training*/true);
  if (backend == BatchNormBackend::Cudnn) {
    return at::cudnn_batch_norm(input, true);
  } else if (backend == BatchNormBackend::Miopen) {
    return at::miopen_batch_norm(input, true);
  } else {
    return batch_norm_cuda(input);
  }
}"""
SELECTOR = b"""BatchNormBackend _select_batch_norm_backend(const Tensor& input, bool training) {
  if (input.is_cuda() && input.scalar_type() != at::kBFloat16) {
    return BatchNormBackend::Cudnn;
  }
  if (input.is_cuda() && detail::getCUDAHooks().compiledWithMIOpen()) {
    return BatchNormBackend::Miopen;
  }
  return BatchNormBackend::Native;
}"""


def test_a_call_in_a_branch_on_a_value_set_from_a_call():
    lines = FUNCTION.split(b"\n")
    assert call_in_selected_branch(lines, 1, 4)  # at::cudnn_batch_norm
    assert call_in_selected_branch(lines, 1, 6)  # the else-if's at::miopen_batch_norm
    assert not call_in_selected_branch(lines, 1, 8)  # the plain else
    assert not call_in_selected_branch({1: "x"}, 1, 4)  # a bundle that does not quote the lines


def test_a_parameter_is_no_selector_s_value():
    text = b"""void addmm(Tensor& out, Activation activation) {
  if (activation == Activation::GELU) {
    at::gelu_(out);"""
    assert not call_in_selected_branch(text.split(b"\n"), 1, 3)


def test_the_selector_s_order_and_a_branch_s_place():
    assert set_from_call(FUNCTION, "backend", "BatchNormBackend") == "_select_batch_norm_backend"
    order = returned(SELECTOR, "BatchNormBackend")
    assert order == ["Cudnn", "Miopen", "Native"]
    assert constraint("if", "if (backend == BatchNormBackend::Cudnn)") == ("backend", "BatchNormBackend", "Cudnn", True)
    assert constraint("return", "after if (backend == BatchNormBackend::Cudnn) return")[3] is False
    assert constraint("else", "else of if (BatchNormBackend::Miopen == backend)") == (
        "backend", "BatchNormBackend", "Miopen", False)
    assert constraint("if", "if (backend == BatchNormBackend::Cudnn && x)") is None
    assert equals("b == E::V") == ("b", "E", "V")
    # the plain else of the chain rules out both tests
    assert earlier_in_chain(FUNCTION, "backend", "BatchNormBackend", "Miopen") == ["Cudnn"]
    assert place({"Miopen": False, "Cudnn": False}, order) == 2
    assert place({"Cudnn": True}, order) == 0
    assert place({"Miopen": True}, order) == 1


def test_a_mode_decoded_from_an_argument_is_no_backend():
    text = b"""void scatter_impl(const Tensor& self, c10::string_view reduce) {
  ReductionType op = get_reduction_enum(reduce);
  if (op == ReductionType::MEAN) {
    auto ones = at::ones_like(self);"""
    assert not call_in_selected_branch(text.split(b"\n"), 1, 4)
    assert set_from_call(text, "op", "ReductionType") is None


def test_a_setting_read_through_a_member_call_is_no_selector_s_value():
    # cuda/linalg/BatchLinearAlgebra.cpp: the preferred backend is the user's setting; the call that
    # sets the variable must be its whole value, not the object of a member call
    text = b"""void lu_solve_kernel(const Tensor& LU) {
  auto preferred_backend = at::globalContext().linalgPreferredBackend();
  if (preferred_backend == at::LinalgBackend::Cusolver) {
    at::linalg_foo(LU);"""
    assert set_from_call(text, "preferred_backend", "LinalgBackend") is None
    assert not call_in_selected_branch(text.split(b"\n"), 1, 4)
    assert set_from_call(b"auto backend = at::native::select_backend(a, f(b));", "backend", "SDPBackend") == "select_backend"
    assert set_from_call(b'auto backend = select_backend(a, /*x)*/ ")");', "backend", "SDPBackend") == "select_backend"


def test_a_caller_that_calls_the_selector_on_its_first_lines_is_not_its_definition():
    lines = b"""Tensor _cholesky_solve_helper_cuda(const Tensor& self) {
#if defined(USE_LINALG_SOLVER)
  auto preferred_backend = pick_backend(self);
  return self;
}
LinalgBackend pick_backend(
    const Tensor& self) {
  return LinalgBackend::Magma;
}""".split(b"\n")
    assert not defines(lines, 1, "pick_backend")
    assert defines(lines, 6, "pick_backend")
