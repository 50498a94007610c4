"""Store.by_name_qual on PyTorch 2.6.0: its SQL narrows the rows in inline namespaces (CPU_CAPABILITY,
unnamed ones) to those holding the written scope, and loses none that Resolver._defs keeps."""
from __future__ import annotations

from atenmap.resolve.chain import _unnamed_dropped

from .test_memo import _qual_rows


def test_by_name_qual_loses_no_row_on_a_real_tree(real_index_26):
    store = real_index_26.store
    kinds = ("function",)
    rows = store.conn.execute(
        "SELECT DISTINCT name, qual FROM facts WHERE kind = 'function' AND (name = 'operator()' OR "
        "instr(qual, 'CPU_CAPABILITY::') > 0 OR instr(qual, '(anonymous namespace)::') > 0) ORDER BY name, qual").fetchall()
    assert len(rows) > 1000
    every: dict[str, list] = {}
    checked = 0
    for name, qual in rows[::3]:
        if name not in every:
            every[name] = store.by_name(name, kinds)
        parts = _unnamed_dropped(qual).split("::")
        for i in range(max(0, len(parts) - 3), len(parts) - 1):
            suffix = "::" + "::".join(parts[i:])
            want = [x for x in every[name] if ("::" + _unnamed_dropped(x.qual)).endswith(suffix)]
            assert _qual_rows(store, name, kinds, suffix) == want, (qual, suffix)
            checked += 1
    assert checked > 500
