"""resolve/memo.StoreMemo and the Store queries it stands in front of (Note [One query per
question]): the memo answers exactly what the Store does, and each caller gets its own list."""
from __future__ import annotations

from atenmap.resolve.chain import _NOT_WRITTEN, _unnamed_dropped
from atenmap.resolve.memo import StoreMemo

KINDS = [("function",), ("class",), ("function", "global"), ("function", "impl_func"), ("declare_dispatch",),
         ("register_dispatch",), ("torch_impl",), ("meta_func",), ("global",)]


def _names(store, limit=400):
    return [r[0] for r in store.conn.execute("SELECT DISTINCT name FROM facts ORDER BY name LIMIT ?", (limit,))]


def test_memo_returns_the_stores_rows_and_fresh_lists(mini_index):
    store = mini_index.store
    memo = StoreMemo(store)
    names = _names(store) + ["no_such_name"]
    assert len(names) > 100
    for name in names:
        for kinds in KINDS:
            want = store.by_name(name, kinds)
            assert memo.by_name(name, kinds) == want
            assert memo.by_name(name, kinds) == want  # the second answer, from the dict
            assert memo.has_name(name, kinds) is bool(want) is store.has_name(name, kinds)
    got = memo.by_name("mul_out", ("function", "impl_func"))
    assert got
    got.clear()  # a caller's list is its own
    assert memo.by_name("mul_out", ("function", "impl_func")) == store.by_name("mul_out", ("function", "impl_func"))


def test_memo_scope_file_id_and_include_answers(mini_index):
    store = mini_index.store
    memo = StoreMemo(store)
    files = sorted(store.files())
    for path in files:
        assert memo.in_file(path, ("function", "class")) == store.in_file(path, ("function", "class"))
        assert memo.includes_of(path) == store.includes_of(path)
    assert store.includes_of_files(files) == {p: store.includes_of(p) for p in files}
    assert memo.includes_of_files(files[:3] + files) == {p: store.includes_of(p) for p in files[:3] + files}
    assert any(store.includes_of(p) for p in files)  # the fixture has resolved includes
    for fn in store.facts_of_kind("function")[:200]:
        assert memo.in_scope(fn.id, ("call", "launch")) == store.in_scope(fn.id, ("call", "launch"))
        assert memo.by_id(fn.id) == store.by_id(fn.id) == fn
    assert memo.by_id(10 ** 9) is None


def test_memo_operator_answers(mini_index):
    store = mini_index.store
    memo = StoreMemo(store)
    kernels = store.kernel_names()
    for kernel in sorted(kernels) + ["no_such_kernel"]:
        assert memo.has_kernel(kernel) is (kernel in kernels) is store.has_kernel(kernel)
    for base in ("mul", "add", "linear", "no_such_op"):
        assert memo.operators_by_base(base) == store.operators_by_base(base)
    assert memo.meta() == store.meta()
    assert store.dispatch_keys() == {d.key for o in mini_index.operators() for d in o.dispatch}


def _qual_rows(store, name, kinds, suffix):
    """What Resolver._defs keeps of by_name_qual's rows."""
    return [r for r in store.by_name_qual(name, kinds, suffix, also_containing=sorted(_NOT_WRITTEN))
            if ("::" + _unnamed_dropped(r.qual)).endswith(suffix)]


def by_name_qual_keeps_what_by_name_would(store, kinds=("function", "class")):
    """For every definition, each suffix of its written qualified name: by_name_qual's rows, once
    the caller drops inline namespaces, are by_name's rows filtered the same way (no row lost)."""
    checked = 0
    for r in store.facts_of_kind(kinds[0]) + store.facts_of_kind(kinds[1]):
        parts = _unnamed_dropped(r.qual).split("::")
        for i in range(len(parts) - 1):
            suffix = "::" + "::".join(parts[i:])
            want = [x for x in store.by_name(r.name, kinds) if ("::" + _unnamed_dropped(x.qual)).endswith(suffix)]
            assert _qual_rows(store, r.name, kinds, suffix) == want, (r.qual, suffix)
            checked += 1
    return checked


def test_by_name_qual_loses_no_row_of_an_inline_namespace(mini_index):
    assert by_name_qual_keeps_what_by_name_would(mini_index.store) > 50


def test_memo_tells_its_observer_each_question_once_with_the_step_that_asked(mini_index):
    """Note [Lookups told to an observer] in resolve/lookups.py: the first time a question is asked,
    with the rows (or yes/no) the index answered; repeats are the memo's, told no more."""
    from atenmap.resolve.lookups import LookupObserver, LookupStep

    class Log(LookupObserver):
        def __init__(self):
            self.told = []

        def found(self, name, kinds, rows, step, suffix=""):
            self.told.append(("found", name, kinds, step, suffix, len(rows)))

        def asked(self, name, kinds, answer, step):
            self.told.append(("asked", name, kinds, step, answer))

    store = mini_index.store
    log = Log()
    memo = StoreMemo(store, observer=log)
    native = ("function", "impl_func")
    want = len(store.by_name("mul_out", native))
    assert memo.by_name("mul_out", native, LookupStep.DEFS) == memo.by_name("mul_out", native) == \
        store.by_name("mul_out", native)
    assert memo.has_name("mul_out", native)  # answered from the rows asked for: no question to the index
    assert memo.has_name("MulFunctor", ("class",), LookupStep.TEMPLATE_ARGUMENT)
    assert memo.has_name("MulFunctor", ("class",))
    assert not memo.has_name("no_such_name", ("class",))
    suffix = "::MulFunctor::operator()"
    rows = memo.by_name_qual("operator()", ("function",), suffix, step=LookupStep.DEFS)
    assert rows == store.by_name_qual("operator()", ("function",), suffix) and rows
    assert log.told == [("found", "mul_out", native, LookupStep.DEFS, "", want),
                        ("asked", "MulFunctor", ("class",), LookupStep.TEMPLATE_ARGUMENT, True),
                        ("asked", "no_such_name", ("class",), LookupStep.DIRECT, False),
                        ("found", "operator()", ("function",), LookupStep.DEFS, suffix, len(rows))]


def test_answers_kept_per_open_index_belong_to_the_index(mini_index):
    """Note [Answers kept per open index]: memos given the open index's dict share its answers; a memo
    given none keeps its own. No module keeps them."""
    from collections.abc import MutableMapping

    import atenmap.resolve.memo as memo_module

    store = mini_index.store
    kept: dict = {}
    a, b = StoreMemo(store, kept), StoreMemo(store, kept)
    assert a.stub_names() is b.stub_names() and a.operator_table() is b.operator_table()
    assert set(kept) == {"stub_names", "operator_table"}
    assert StoreMemo(store).stub_names() is not a.stub_names() == StoreMemo(store).stub_names()
    mini_index.chain("mul.out", keys=["CUDA"])
    assert {"stub_names", "operator_table", "passed"} <= set(mini_index._kept)
    assert not [n for n, v in vars(memo_module).items() if isinstance(v, MutableMapping) and not n.startswith("__")]
