"""Note [A setting left at its default] (resolve/choices.py): which runtime-setting labels hold for a
user who sets nothing."""
from __future__ import annotations

import pytest

from atenmap.model import Location, Reason
from atenmap.resolve import choices


def _runtime(setting: str, values: str) -> Reason:
    how = next(c.how for c in choices.CHOICES if c.setting == setting)
    return Reason("runtime", f"{setting}: {values} ({how})", Location("a.cpp", 1))


@pytest.mark.parametrize("setting, values, platform, off", [
    ("linalg library", "Magma", "cuda", True),  # svd_kernel's ``if (use_magma)``
    ("linalg library", "not Magma", "cuda", False),
    ("linalg library", "Cusolver", "cuda", True),  # ``case at::LinalgBackend::Cusolver:``
    ("linalg library", "default", "cuda", False),  # the switch's ``default:`` (the heuristic)
    ("linalg library", "Magma or default", "cuda", False),  # a helper called under both
    ("BLAS library", "Cublaslt", "cuda", True),
    ("BLAS library", "not Cublaslt", "cuda", False),
    ("BLAS library", "Cublaslt", "rocm", False),  # hipBLASLt is ROCm's default (Context.h)
    ("BLAS library", "not Cublaslt", "rocm", True),
    ("TunableOp", "on", "cuda", True),
    ("TunableOp", "off", "cuda", False),
    ("cuDNN API", "v7", "cuda", True),
    ("addmm cuBLASLt epilogue", "yes", "cuda", False),  # the call's bias decides, no setting a user leaves
    ("linalg library", "Magma [#if defined(USE_LINALG_SOLVER)]", "cuda", True),
    # an else-if chain's last else (Note [An else-if chain's earlier tests]): every value it names must hold
    ("BLAS library", "not Cublaslt and not Ck [#if defined(USE_ROCM)]", "rocm", True),
    ("BLAS library", "not Cublaslt and not Ck [#if defined(USE_ROCM)]", "cuda", False),
    ("BLAS library", "not Cublas and not Cublaslt", "cuda", True),
])
def test_off_default(setting, values, platform, off):
    assert choices.off_default([_runtime(setting, values)], platform) is off


def test_other_reasons_are_no_setting():
    assert choices.off_default([Reason("if", "if (use_magma)", Location("a.cpp", 1))]) is False
    assert choices.off_default([]) is False


def test_a_case_stacked_on_default_holds_for_the_default():
    # BatchLinearAlgebra.cpp: ``case at::LinalgBackend::Cusolver: default: linalg_eigh_cusolver(...)``
    got = choices.label("case", "case at::LinalgBackend::Cusolver: default:", switch="switch (preferred_backend)",
                        names={"preferred_backend": "at::globalContext().linalgPreferredBackend()"})
    assert got == ("linalg library", "Cusolver or default")
    assert choices.off_default([_runtime(*got)]) is False
    alone = choices.label("case", "case at::LinalgBackend::Magma:", switch="switch (preferred_backend)",
                          names={"preferred_backend": "at::globalContext().linalgPreferredBackend()"})
    assert alone == ("linalg library", "Magma") and choices.off_default([_runtime(*alone)]) is True


@pytest.mark.parametrize("text, stacked", [
    ("case at::LinalgBackend::Cusolver:\n    default:\n      f();", True),
    ("case at::LinalgBackend::Cusolver: default: f();", True),
    ("case at::LinalgBackend::Cusolver: // the heuristic's pick\n\n    default:\n      f();", True),
    # labels stacked on labels: every one of them reaches the statement, ``default:`` too
    ("case at::LinalgBackend::Magma:\n    case at::LinalgBackend::Cusolver:\n    default:\n      f();", True),
    ("case at::LinalgBackend::Magma: case at::LinalgBackend::Cusolver: default: f();", True),
    ("case at::LinalgBackend::Magma:\n      f();\n      break;\n    default:\n      g();", False),
    ("case at::LinalgBackend::Magma: {\n      f();\n    }\n    default:", False),
    ("case at::LinalgBackend::Magma:\n      switch (n) {\n        default:\n          f();", False),  # an inner switch's
])
def test_a_case_label_stacked_on_default(text, stacked):
    from atenmap.resolve.runs import _stacked_on_default
    assert _stacked_on_default(text.encode().split(b"\n"), 1) is stacked


@pytest.mark.parametrize("targs, scalar", [
    ("float", "Float"),
    ("c10::complex<float>", "ComplexFloat"),
    # CUDASolver.cpp: ``template <> void syevj<c10::complex<float>, float>(...)``: a complex call's
    ("c10::complex<float>, float", "ComplexFloat"),
    ("c10::complex<double>, double", "ComplexDouble"),
    ("Foo, float", None),  # the first argument no element type: no dtype
    ("cutlass::bfloat16_t, 128", None),  # flash's run_mha_fwd_<T, head size>: left unread
])
def test_a_specialization_with_a_value_type_is_its_element_types(targs, scalar):
    from atenmap.resolve.runs import _specialized_scalar
    assert _specialized_scalar(targs) == scalar


def test_one_sites_values_all_hold_and_a_named_value_stands_for_the_nots():
    """Note [An else-if chain's earlier tests]: one call site's values of a setting are joined with
    "and" (the sites' with "or"); ``if (== Ck)`` inside ``else of if (== Cublaslt)`` is ``Ck``."""
    blas = "at::globalContext().blasPreferredBackend() == BlasBackend::"
    last = [("else", f"else of if ({blas}Ck)", 5), ("else", f"else of if ({blas}Cublaslt)", 3)]
    ck = [("if", f"if ({blas}Ck)", 5), ("else", f"else of if ({blas}Cublaslt)", 3)]
    (got,) = choices.runtime_reasons([last], "a.cpp")
    assert got.text.startswith("BLAS library: not Cublaslt and not Ck (") and got.loc.line == 3
    (got,) = choices.runtime_reasons([ck], "a.cpp")
    assert got.text.startswith("BLAS library: Ck (")
    (got,) = choices.runtime_reasons([last, ck], "a.cpp")
    assert got.text.startswith("BLAS library: not Cublaslt and not Ck or Ck (")
