"""torch.compile facts (extract/inductor.py, resolve/compile.py): small trees written here that
imitate Inductor's registration patterns, then the CLI on the fixture tree (no torch/_inductor)."""
from __future__ import annotations

import json
import textwrap
from pathlib import Path

from atenmap.extract.inductor import extract, inputs_unchanged, extract_with_inputs
from atenmap.resolve.compile import cia_decomposes, plan, summary

from .conftest import cli_run

LOWERING = '''
import torch
aten = torch.ops.aten
lowerings = {}
fallbacks = set()

def register_lowering(aten_fn, broadcast=False):
    return functools.partial(_register_lowering, aten_fn, broadcast=broadcast)

def register_pointwise(aten_fn, name=None):
    fn = make_pointwise(name)
    fn = register_lowering(aten_fn)(fn)
    return fn

def register_inplace(aten_op, outplace_op):
    def fn(*args):
        return outplace_op(*args)
    register_lowering(aten_op)(fn)

def make_fallback(op, warn=True):
    def register_fallback(op_overload):
        return register_lowering(op_overload)(fallback_handler(op_overload))
    for o in op.op_overloads():
        register_fallback(o)

def fallback_handler(kernel, add_to_fallback_set=True):
    fallbacks.add(kernel)

@register_lowering(aten.mm)
def tuned_mm(a, b):
    return mm_template

mm_template = TritonTemplate(name="mm")
relu = register_pointwise(aten.relu)
register_inplace(aten.relu_, relu)
for op in [aten.sort, aten.topk.default]:
    make_fallback(op)
fallback_cumsum = fallback_handler(aten.cumsum.default)

@register_lowering(aten.cumsum)
def cumsum(x, dim):
    return fallback_handler(aten.cumsum.default, add_to_fallback_set=False)

make_fallback(aten.cummax)

@register_lowering(aten.cummax)
def cummax(x, dim):
    return fallback_handler(aten.cummax.default)

if torch.xpu._is_compiled():
    make_fallback(aten.gelu)
if hasattr(aten, "lift_fresh"):
    register_lowering(aten.lift_fresh)(tuned_mm)
register_lowering(aten.sort.stable)(tuned_mm)
'''

DECOMP_INIT = '''
def register_decomposition(aten_op, registry=None, *, type="post_autograd"):
    def decomposition_decorator(fn):
        _add_op_to_registry(registry, aten_op, fn)
    return decomposition_decorator

def _core_aten_decompositions_post_autograd():
    return get_decompositions([aten.addcmul, aten.hardtanh.default, aten.glu])
'''

DECOMPOSITIONS = '''
from torch._decomp import register_decomposition
aten = torch.ops.aten

@register_decomposition(aten.addcmul)
def addcmul(a, b, c):
    pass

@register_decomposition([aten.hardtanh.default, aten.hardtanh.out])
@aten.hardtanh.default.py_impl(DispatchKey.CompositeImplicitAutograd)
def hardtanh(x):
    pass

@register_decomposition(aten.glu)
def glu(x):
    pass

@register_decomposition(aten.mish, type="pre_autograd")
def mish(x):
    pass
'''

REFS = '''
infer_aten_op = object()

def _make_elementwise_unary_reference(kind, *, aten_op=infer_aten_op):
    def inner(prim):
        nonlocal aten_op
        if aten_op is infer_aten_op:
            aten_op = getattr(aten, prim.__name__)
        register_decomposition(aten_op)(prim)
    return inner

def _make_inplace(fn):
    inplace_name = f"{fn.__name__}_"
    return register_decomposition(getattr(aten, inplace_name))(fn)

@_make_elementwise_unary_reference(0)
def sigmoid(a):
    pass

sigmoid_ = _make_inplace(sigmoid)
'''

INDUCTOR_DECOMP = '''
from torch._decomp import core_aten_decompositions, get_decompositions, remove_decompositions
import torch._decomp as decomp
aten = torch.ops.aten
inductor_decompositions = get_decompositions([aten.sigmoid, aten.sigmoid_])
decompositions = {**core_aten_decompositions(), **inductor_decompositions}
decomps_to_exclude: list = [aten.glu]
remove_decompositions(decompositions, decomps_to_exclude)

def register_decomposition(ops):
    return decomp.register_decomposition(ops, decompositions)

@register_decomposition([aten.mm])
def mm(a, b):
    return NotImplemented
'''

GRAPH = '''
class GraphLowering:
    def call_function(self, target, args, kwargs):
        if target not in lowerings:
            if config.implicit_fallbacks:
                make_fallback(target, layout_constraint=None)
'''

FX = '''
aten = torch.ops.aten

@register_lowering_pattern(CallFunction(aten.mm, Arg(), Arg()))
def mm_pattern(match, a, b):
    return a

def other(node):
    return node.target is aten.relu.default
'''


def _tree(root: Path) -> Path:
    files = {"torch/_inductor/lowering.py": LOWERING, "torch/_inductor/decomposition.py": INDUCTOR_DECOMP,
             "torch/_inductor/graph.py": GRAPH, "torch/_inductor/fx_passes/post_grad.py": FX,
             "torch/_decomp/__init__.py": DECOMP_INIT, "torch/_decomp/decompositions.py": DECOMPOSITIONS,
             "torch/_refs/__init__.py": REFS}
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text).lstrip())
    return root


def _line(text: str, needle: str) -> int:
    return textwrap.dedent(text).lstrip().splitlines().index(needle) + 1


def _plan(facts, op, **kw):
    packet = op.split(".")[0]
    return plan([f for f in facts if f.op in (packet, "")], op, **kw)


def test_lowerings_through_registrars_loops_and_overrides(tmp_path):
    facts = extract(_tree(tmp_path))
    mm = _plan(facts, "mm")
    assert (mm.lowering.symbol, mm.lowering.line) == ("tuned_mm", _line(LOWERING, "def tuned_mm(a, b):"))
    assert [(t.role, t.symbol) for t in mm.templates] == [("template", "mm_template")]
    relu = _plan(facts, "relu")
    assert relu.lowering.via == "register_pointwise" and relu.lowering.line == _line(LOWERING, "relu = register_pointwise(aten.relu)")
    assert _plan(facts, "relu_").lowering.via == "register_inplace"
    # a loop over a literal list, each element registered; make_fallback names every overload
    topk, sort = _plan(facts, "topk"), _plan(facts, "sort")
    assert topk.fallback and topk.lowering.role == "fallback" and sort.fallback
    # an overload registered after the packet's fallback replaces it; the fallback membership stays
    stable = _plan(facts, "sort.stable")
    assert stable.lowering.role == "lowering" and stable.fallback
    # a module-level fallback_handler puts the op into fallbacks; the lowering is the one used;
    # a fallback_handler inside a lowering's body runs only when it lowers
    cumsum = _plan(facts, "cumsum")
    assert cumsum.lowering.symbol == "cumsum" and cumsum.fallback
    assert [f.line for f in cumsum.lowerings if f.via == "fallback_handler"] == [
        _line(LOWERING, "fallback_cumsum = fallback_handler(aten.cumsum.default)")]
    # a packet's lowering after make_fallback only fills overloads without one: the fallback stays
    cummax = _plan(facts, "cummax")
    assert cummax.lowering.role == "fallback" and [f.symbol for f in cummax.lowerings][-1] == "cummax"
    # under a build test: listed with its condition, not taken; hasattr(aten, ...) is no condition
    gelu = _plan(facts, "gelu")
    assert gelu.lowering is None and not gelu.fallback and gelu.lowerings[0].cond == "torch.xpu._is_compiled()"
    assert _plan(facts, "lift_fresh").lowering.symbol == "tuned_mm"


def test_decomposition_table_as_inductor_builds_it(tmp_path):
    facts = extract(_tree(tmp_path))
    addcmul = _plan(facts, "addcmul.default")
    assert addcmul.table_why == "core" and addcmul.table.line == _line(DECOMPOSITIONS, "def addcmul(a, b, c):")
    glu = _plan(facts, "glu")
    assert not glu.in_table and glu.excluded.line == _line(INDUCTOR_DECOMP, "decomps_to_exclude: list = [aten.glu]")
    assert _plan(facts, "mm").table_why == "own"
    # a refs registrar with a defaulted op parameter registers the op named as the function
    sig = _plan(facts, "sigmoid")
    assert sig.table_why == "inductor" and sig.table.file == "torch/_refs/__init__.py"
    # ... and a by-binding registrar the op named as the binding (sigmoid_ = _make_inplace(sigmoid))
    assert _plan(facts, "sigmoid_").table.symbol == "sigmoid"
    # registered for another stage (type=pre_autograd): not Inductor's
    mish = _plan(facts, "mish")
    assert mish.decompositions and not mish.in_table
    # a Python CompositeImplicitAutograd kernel makes a preservable op CIA in the table
    ht = _plan(facts, "hardtanh", preservable=True)
    assert ht.in_table
    # a packet's registration does not cover TorchScript-only overloads
    assert not _plan(facts, "addcmul.float", native=False).decompositions


def test_patterns_implicit_fallback_and_summary(tmp_path):
    facts = extract(_tree(tmp_path))
    mm = _plan(facts, "mm")
    assert [(p.symbol, p.via) for p in mm.patterns] == [("mm_pattern", "CallFunction")]
    assert [p.symbol for p in _plan(facts, "relu").patterns] == ["other"]
    add = _plan(facts, "add.Tensor")
    assert add.lowering is None and add.implicit.line == _line(GRAPH, " " * 16 + "make_fallback(target, layout_constraint=None)")
    assert "implicit fallback" in summary(add)
    assert summary(_plan(facts, "mm")).startswith("decomposed (Inductor's own decomposition); lowered (tuned_mm)")


def test_cia_preservable_schema():
    assert cia_decomposes("linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor")
    assert not cia_decomposes("relu_(Tensor(a!) self) -> Tensor(a!)")


def test_stamp_sees_an_edit(tmp_path):
    root = _tree(tmp_path)
    _facts, stamp = extract_with_inputs(root)
    assert inputs_unchanged(root, stamp)
    (root / "torch/_refs/__init__.py").write_text(REFS + "\n# edited\n")
    assert not inputs_unchanged(root, stamp)
    assert not inputs_unchanged(root, None)


def test_no_inductor_is_one_note(mini_tree, capsys):
    code, out, err = cli_run(capsys, "add.out", "--compile", "--source", str(mini_tree), "--no-codegen", "--json",
                             errors_only=False)
    assert code == 0
    assert json.loads(out)["compile"] == []
    notes = [ln for ln in err.splitlines() if "torch/_inductor" in ln]
    assert len(notes) == 1 and notes[0].startswith("atenmap: warning: no torch/_inductor in ")


def _compile_state(tree: Path) -> tuple[bool, int]:
    """(the stamp is there, the compile table's rows) of ``tree``'s index, read from the file."""
    from atenmap.build import index_path
    from atenmap.source.find import describe
    from atenmap.store import Store

    store = Store.open(index_path(describe(tree, "option")))
    try:
        return "compile_inputs" in store.meta(), store.compile_count()
    finally:
        store.close()


KERNEL = ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
          "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)")


def test_compile_facts_made_when_asked(mini_tree, capsys):
    """Note [torch.compile facts when asked]: a plain query's build leaves them out and says so in
    meta; ``--compile`` makes them (the answer as ``atenmap index`` makes it); an edit of their
    inputs drops them at the next plain build; ``Index.compile`` makes them for a library caller."""
    from atenmap.api import Index

    _tree(mini_tree)
    src = ("--source", str(mini_tree), "--no-codegen")
    code, plain, _ = cli_run(capsys, "mm", *src, "--json")
    assert code == 0 and _compile_state(mini_tree) == (False, 0)
    code, lazy, _ = cli_run(capsys, "mm", "--compile", *src, "--json")
    assert code == 0 and json.loads(lazy)["compile"]
    made = _compile_state(mini_tree)
    assert made[0] and made[1] > 0
    assert cli_run(capsys, "index", *src)[0] == 0  # fresh, with its facts: nothing rebuilt
    assert _compile_state(mini_tree) == made
    code, again, _ = cli_run(capsys, "mm", "--compile", *src, "--json")
    assert again == lazy
    refs = mini_tree / "torch/_refs/__init__.py"
    refs.write_text(refs.read_text() + "\n# edited\n")
    assert cli_run(capsys, "mm", *src, "--json")[1] == plain
    assert _compile_state(mini_tree) == (False, 0)
    with Index.open(mini_tree, codegen=False) as ix:
        from atenmap.views.compile import compile_list

        before = ix.chain("mm", keys=["CPU"])
        where = ix.where("aten/src/ATen/native/BinaryOps.cpp", 10)
        kernel = ix.kernel(KERNEL).definition  # the Index keeps its KernelIndex, which read the old file
        assert kernel is not None
        assert len(compile_list(ix.compile("mm"))) == len(json.loads(lazy)["compile"])
        # what the Index kept from the file before was dropped with it: its verbs read the new one
        assert ix.chain("mm", keys=["CPU"]) == before
        assert ix.where("aten/src/ATen/native/BinaryOps.cpp", 10) == where
        assert ix.kernel(KERNEL).definition == kernel
    assert _compile_state(mini_tree)[0]
    code, forced, _ = cli_run(capsys, "index", "--force", *src)
    assert code == 0 and _compile_state(mini_tree) == made
    assert cli_run(capsys, "mm", "--compile", *src, "--json")[1] == lazy
