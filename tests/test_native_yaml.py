"""native_yaml on inline yaml (torchgen style): dispatch rules, locations, errors, operator lookup."""
from __future__ import annotations

import textwrap

import pytest

from atenmap.errors import AmbiguousOperator, AtenmapError, UnknownOperator, YamlError
from atenmap.model import DispatchEntry, Location, OperatorName, UfuncLoop
from atenmap.extract.native_yaml import find_operator, load_operators, parse_operators


def parse(text: str):
    return parse_operators(textwrap.dedent(text).lstrip("\n"), "nf.yaml")


def one(text: str):
    (op,) = parse(text)
    return op


def dispatch(op):
    return {d.key: (d.kernel, d.structured, d.explicit) for d in op.dispatch}


# -- dispatch map --------------------------------------------------------------------------------

def test_split_dispatch_keys_and_namespace():
    op = one("""
        - func: abs.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
          dispatch:
            CPU, CUDA: abs_out
            SparseCPU,SparseCUDA: at::native::abs_sparse_out
        """)
    assert op.has_dispatch_key
    assert dispatch(op) == {
        "CPU": ("abs_out", False, True),
        "CUDA": ("abs_out", False, True),
        "SparseCPU": ("abs_sparse_out", False, True),
        "SparseCUDA": ("abs_sparse_out", False, True),
    }
    assert [d.key for d in op.dispatch] == sorted(d.key for d in op.dispatch)


def test_later_dispatch_key_wins():
    op = one("""
        - func: f(Tensor self) -> Tensor
          dispatch:
            CPU, CUDA: f_generic
            CUDA: f_cuda
        """)
    assert dispatch(op)["CUDA"] == ("f_cuda", False, True)
    assert dispatch(op)["CPU"] == ("f_generic", False, True)


@pytest.mark.parametrize("func, kernel", [
    ("linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor", "linear"),
    ("linear.out(Tensor input, Tensor weight, Tensor? bias=None, *, Tensor(a!) out) -> Tensor(a!)", "linear_out"),
    ("relu_(Tensor(a!) self) -> Tensor(a!)", "relu_"),
    ("__iand__.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)", "__iand__"),
    # A mutable positional argument does not make an out= function.
    ("_amp_update_scale_(Tensor(a!) self, Tensor(b!) growth_tracker) -> Tensor(a!)", "_amp_update_scale_"),
    ("split.sizes(Tensor(a -> *) self, SymInt[] split_size, int dim=0) -> Tensor(a)[]", "split"),
    ("aten::chunk(Tensor(a -> *) self, int chunks, int dim=0) -> Tensor(a)[]", "chunk"),
    ("f.out(Tensor self, *, Tensor(a!)[] out) -> ()", "f_out"),
])
def test_implicit_composite_implicit_autograd(func, kernel):
    op = one(f"- func: {func}\n")
    assert not op.has_dispatch_key
    assert op.dispatch == (DispatchEntry("CompositeImplicitAutograd", kernel, structured=False, explicit=False),)
    assert op.kind == "composite_implicit"


def test_no_implicit_kernel_for_structured_or_delegate():
    ops = parse("""
        - func: sin(Tensor self) -> Tensor
          structured_delegate: sin.out

        - func: sin.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
          structured: True
        """)
    assert [op.dispatch for op in ops] == [(), ()]
    assert ops[0].structured_delegate == OperatorName("sin", "out")
    assert ops[0].kind == "structured_delegate"


def test_structured_flag_only_on_structured_keys():
    op = one("""
        - func: sin.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
          structured: True
          structured_inherits: TensorIteratorBase
          dispatch:
            CPU, CUDA, MPS: sin_out
            SparseCPU: sin_sparse_out
            CompositeExplicitAutograd: sin_out_ce
        """)
    assert dispatch(op) == {
        "CPU": ("sin_out", True, True),
        "CUDA": ("sin_out", True, True),
        "MPS": ("sin_out", True, True),
        "SparseCPU": ("sin_sparse_out", False, True),
        "CompositeExplicitAutograd": ("sin_out_ce", False, True),
    }
    assert op.structured and op.structured_inherits == "TensorIteratorBase"


def test_delegate_keeps_its_explicit_non_structured_keys():
    op = one("""
        - func: sin(Tensor self) -> Tensor
          structured_delegate: sin.out
          variants: function, method
          dispatch:
            SparseCPU, SparseCUDA: sin_sparse
        """)
    assert dispatch(op) == {"SparseCPU": ("sin_sparse", False, True), "SparseCUDA": ("sin_sparse", False, True)}
    assert op.variants == ("function", "method")


def test_composite_explicit_and_nested_tensor_keys_are_kept():
    op = one("""
        - func: f(Tensor self) -> Tensor
          dispatch:
            CompositeImplicitAutograd: f
            CompositeImplicitAutogradNestedTensor: f_nested
        """)
    assert dispatch(op) == {
        "CompositeImplicitAutograd": ("f", False, True),
        "CompositeImplicitAutogradNestedTensor": ("f_nested", False, True),
    }


def test_ufunc_implicit_keys():
    op = one("""
        - func: add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)
          structured: True
          ufunc_inner_loop:
            Generic: add (AllAndComplex, BFloat16, Half, ComplexHalf)
            ScalarOnly: add (Bool)
          dispatch:
            SparseCPU: add_out_sparse_cpu
            MPS: add_out_mps
        """)
    assert dispatch(op) == {
        "CPU": ("ufunc_add_CPU", True, False),
        "CUDA": ("ufunc_add_CUDA", True, False),
        "MPS": ("add_out_mps", True, True),
        "SparseCPU": ("add_out_sparse_cpu", False, True),
    }
    assert op.ufunc_inner_loop == (
        UfuncLoop("Generic", "add", ("AllAndComplex", "BFloat16", "Half", "ComplexHalf")),
        UfuncLoop("ScalarOnly", "add", ("Bool",)),
    )
    assert op.kind == "ufunc"


def test_ufunc_inner_loop_string_is_generic():
    op = one("""
        - func: mul.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
          structured: True
          ufunc_inner_loop: mul (All)
        """)
    assert op.ufunc_inner_loop == (UfuncLoop("Generic", "mul", ("All",)),)
    assert [d.kernel for d in op.dispatch] == ["ufunc_mul_CPU", "ufunc_mul_CUDA"]


@pytest.mark.parametrize("extra, message", [
    ("  ufunc_inner_loop: add (All)\n", "requires 'structured: True'"),
    ("  structured: True\n  ufunc_inner_loop: add (All)\n  dispatch:\n    CPU: add_cpu\n", "explicit CPU"),
    ("  structured: True\n  ufunc_inner_loop: add All\n", "bad ufunc_inner_loop"),
])
def test_ufunc_errors(extra, message):
    with pytest.raises(YamlError, match=message):
        parse("- func: add.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)\n" + extra)


# -- the other keys ------------------------------------------------------------------------------

def test_every_key_is_modelled():
    op = one("""
        - func: cat.out(Tensor[] tensors, int dim=0, *, Tensor(a!) out) -> Tensor(a!)
          structured: True
          precomputed:
          - dim -> int dim, int valid
          device_check: NoCheck
          device_guard: False
          category_override: factory
          cpp_no_default_args: ['dim']
          use_const_ref_for_mutable_tensors: True
          python_module: nn
          manual_cpp_binding: True
          tags: [core, pointwise]
          autogen: cat.x, cat.y
          dispatch:
            CPU: cat_out_cpu
        """)
    assert op.other == (
        ("category_override", "factory"),
        ("cpp_no_default_args", ("dim",)),
        ("device_check", "NoCheck"),
        ("device_guard", False),
        ("precomputed", ("dim -> int dim, int valid",)),
        ("use_const_ref_for_mutable_tensors", True),
    )
    assert op.python_module == "nn" and op.manual_cpp_binding
    assert op.tags == ("core", "pointwise")
    assert op.autogen == ("cat.x", "cat.y")
    hash(op)  # frozen and hashable: lists became tuples


@pytest.mark.parametrize("tags, expected", [("core", ("core",)), ("core, pointwise", ("core", "pointwise"))])
def test_tags_as_string(tags, expected):
    assert one(f"- func: f(Tensor self) -> Tensor\n  tags: {tags}\n").tags == expected


def test_manual_kernel_registration_still_gets_implicit_kernel():
    op = one("- func: f(Tensor self) -> Tensor\n  manual_kernel_registration: True\n")
    assert op.manual_kernel_registration
    assert dispatch(op) == {"CompositeImplicitAutograd": ("f", False, False)}


# -- locations and errors ------------------------------------------------------------------------

def test_locations_are_func_lines():
    ops = parse("""
        # comment

        - func: a(Tensor self) -> Tensor
          variants: function

        # another
        - func: b(Tensor self) -> Tensor
          dispatch:
            CPU: b_cpu
        - func: c(Tensor self) -> Tensor
        """)
    assert [op.loc for op in ops] == [Location("nf.yaml", 3), Location("nf.yaml", 7), Location("nf.yaml", 10)]


def test_unknown_key_names_line_and_entry():
    with pytest.raises(YamlError) as e:
        parse("""
            - func: add.Tensor(Tensor self, Tensor other) -> Tensor

            - func: add.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
              foo: bar
            """)
    assert str(e.value) == "nf.yaml:3: unknown key 'foo' in native_functions.yaml entry 'add.out'"


def test_has_composite_flags_are_not_yaml_keys():
    # torchgen computes has_composite_*_kernel from the dispatch table; in the yaml it is a leftover.
    with pytest.raises(YamlError, match="unknown key 'has_composite_implicit_autograd_kernel'"):
        parse("- func: f(Tensor self) -> Tensor\n  has_composite_implicit_autograd_kernel: True\n")


def test_missing_func_names_line():
    with pytest.raises(YamlError, match=r"^nf\.yaml:2: .*no 'func' key"):
        parse("- func: a(Tensor self) -> Tensor\n- variants: function\n")


def test_malformed_yaml_names_line():
    with pytest.raises(YamlError, match=r"^nf\.yaml:4: malformed yaml: mapping values"):
        parse("- func: a(Tensor self) -> Tensor\n  dispatch:\n   CPU: a\n    CUDA: b\n")  # line 4 over-indented
    # The parser notices an unclosed bracket on the next line; the message names where it started.
    with pytest.raises(YamlError, match=r"^nf\.yaml:4: malformed yaml: .*\(while parsing .* at line 3\)$"):
        parse("- func: a(Tensor self) -> Tensor\n  dispatch:\n    CPU: [unclosed\n- func: b() -> Tensor\n")


@pytest.mark.parametrize("text, message", [
    ("- func: f(Tensor self) -> Tensor\n  structured: yes please\n", r"nf\.yaml:1: .*'f': 'structured' has the wrong type"),
    ("- func: f(Tensor self) -> Tensor\n  variants: function, methd\n", "illegal variant 'methd'"),
    ("- func: f(Tensor self) -> Tensor\n  dispatch:\n    CPU: [a, b]\n", "bad dispatch entry"),
    ("- func: f(Tensor self) -> Tensor\n  dispatch:\n    'CPU,,CUDA': f\n", "bad dispatch key ''"),
    ("- func: f(Tensor self) -> Tensor\n  structured_delegate: 'f.out.x'\n", "not an operator name"),
    ("- func: f(Tensor self) -> Tensor\n  manual_kernel_registration: True\n  dispatch:\n    CPU: f\n",
     "both 'dispatch' and 'manual_kernel_registration'"),
    ("- func: not a schema\n", r"nf\.yaml:1: not a function schema"),
    ("- just a string\n", r"nf\.yaml:1: expected a mapping"),
    ("func: f(Tensor self) -> Tensor\n", r"nf\.yaml:1: expected a list"),
])
def test_bad_values(text, message):
    with pytest.raises(YamlError, match=message):
        parse_operators(text, "nf.yaml")


def test_empty_yaml():
    assert parse_operators("", "nf.yaml") == []
    assert parse_operators("# only a comment\n", "nf.yaml") == []


def test_load_operators_location_relative_to_root(tmp_path):
    native = tmp_path / "aten" / "src" / "ATen" / "native"
    native.mkdir(parents=True)
    (native / "native_functions.yaml").write_text("\n- func: f(Tensor self) -> Tensor\n")
    (op,) = load_operators(native / "native_functions.yaml", tmp_path)
    assert op.loc == Location("aten/src/ATen/native/native_functions.yaml", 2)
    with pytest.raises(YamlError, match="cannot read"):
        load_operators(native / "missing.yaml", tmp_path)


# -- OperatorName and find_operator ---------------------------------------------------------------

@pytest.mark.parametrize("text", ["add", "add.out", "__iand__.Tensor", "_foo_.bar_1", "linalg_vector_norm"])
def test_operator_name_round_trips(text):
    name = OperatorName.parse(text)
    assert str(name) == text
    assert OperatorName.parse(str(name)) == name
    assert OperatorName.parse("aten::" + text) == name


@pytest.mark.parametrize("text", ["", "add.", "a.b.c", "1add", "add out"])
def test_operator_name_rejects(text):
    with pytest.raises(AtenmapError):
        OperatorName.parse(text)


OPS = """
- func: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
- func: add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor
- func: add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)
- func: add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)
- func: linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor
- func: linear.out(Tensor input, Tensor weight, Tensor? bias=None, *, Tensor(a!) out) -> Tensor(a!)
- func: exp(Tensor self) -> Tensor
- func: exp_(Tensor(a!) self) -> Tensor(a!)
- func: exp.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
- func: cudnn_only.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
"""


@pytest.mark.parametrize("text, expected", [
    ("add.out", "add.out"),
    ("aten::add.Tensor", "add.Tensor"),
    (" add_.Tensor ", "add_.Tensor"),
    ("linear", "linear"),  # an overload-less op is not ambiguous with linear.out
    ("exp", "exp"),
    ("aten::exp.default", "exp"),
    ("cudnn_only", "cudnn_only.out"),  # the only overload
])
def test_find_operator(text, expected):
    assert str(find_operator(parse_operators(OPS), text).name) == expected


def test_find_operator_ambiguous_lists_every_overload():
    with pytest.raises(AmbiguousOperator) as e:
        find_operator(parse_operators(OPS), "add")
    assert e.value.candidates == ["add.Scalar", "add.Tensor", "add.out"]
    assert "add.Scalar, add.Tensor, add.out" in str(e.value)


def test_find_operator_did_you_mean():
    with pytest.raises(UnknownOperator) as e:
        find_operator(parse_operators(OPS), "ad.out")
    assert str(e.value).startswith("unknown operator 'ad.out'; did you mean add.out")
    assert len(str(e.value).split("did you mean ")[1].split(", ")) <= 5


@pytest.mark.parametrize("text", ["zzzz", "not a name!", "add.nope"])
def test_find_operator_unknown(text):
    with pytest.raises(UnknownOperator, match=f"unknown operator '{text}'"):
        find_operator(parse_operators(OPS), text)
