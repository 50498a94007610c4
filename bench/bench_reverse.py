"""Score atenmap's reverse lookup (kernel name -> operators) against the GPU oracle.

    python bench/bench_reverse.py --tree PATH_TO_PYTORCH_2.6.0 \
        [--oracle fixtures/oracle/opinfo_cuda_h200_torch2.11.json] [--json out.json] [--misses N]

``--oracle fixtures/oracle/opinfo_cuda_h200_torch2.11_half_backward.json.gz`` scores the second set
(passes float16 and float32+backward; gzip read as is).

The oracle (fixtures/oracle, bench/oracle_record.py) records, for every CUDA kernel real PyTorch ran on
an H200, ``op``: the innermost ATen overload active at its launch (the bare name for a default overload).
For each distinct kernel name, per dtype pass (float32, bfloat16), the truth is the set of ``op``s the
oracle saw launch that name. ``Index.kernel(name)`` is asked once per name, as a user pasting it would,
and its ranked operators are compared with that set, two ways:

* overload: ``aten::add.Tensor [CUDA]`` is right for ``add.Tensor`` (``aten::mm`` for ``mm``);
* base: the name before the overload, a trailing ``_`` dropped (``add_.Tensor``, ``add.out`` -> ``add``).

What counts as right comes from the oracle alone; atenmap's chains are never asked. Categories are
decided from the name and the tree's text, not from atenmap's parser:

* in-tree: the name carries a PyTorch namespace (``at::``, ``c10::``, ``pytorch_flash::`` ...), or its
  function is a ``__global__`` function the tree's aten/src defines, tests aside (``softmax_warp_forward``;
  found by a regular expression over the text), or it is a jiterator
  kernel (``<fn>_kernel`` with ``"<fn>"`` a string of aten/src). Scored: source found (a ``__global__``
  definition, launch line or functor/lambda), the op first, the op in the first three.
* library: every other kernel. Scored: a library named, the op in the first three.
* apart (neither pass nor fail): memcpy/memset (the oracle's ``kind``), kernels launched outside any
  op (``op: null``), and ops the tree's native_functions.yaml does not declare (the GPU ran torch
  2.11), read with pyyaml (bench_truth.TreeText.has_op), never with atenmap's operator table: an op
  the yaml declares but atenmap cannot find is scored, and missed.

``--rule plain`` scores by issue 38's plain rule instead: a kernel is in-tree when its function name
(the last component before its template arguments) is a token of the tree's aten/src text and no vendor
marker of bench_truth claims it (``vendor_family``), every other kernel a library's; memcpy/memset are
not set apart but scored as a third group, ``memory``, with the library columns. Jiterator kernels, whose
names are nowhere in the tree's text, are a library's by that rule.

Two weightings: by kernel names, and by kernel events (each name weighted by its launches in the
oracle). Exit status 0 whatever the score: a measurement, not a test.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_ORACLE = REPO / "fixtures" / "oracle" / "opinfo_cuda_h200_torch2.11.json"
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_truth import ATEN_NS, JITERATOR, TreeText, load_oracle, vendor_family  # noqa: E402  (one place for the tree's text)

DTYPES = ("float32", "bfloat16")  # the first oracle's passes; another oracle's come from its pairs
IN_TREE_COLUMNS = ("source", "first", "first_base", "top3", "top3_base")
LIBRARY_COLUMNS = ("library", "top3", "top3_base")


def base_of(op: str) -> str:
    """``aten::add_.Tensor [CUDA]`` / ``add_.Tensor`` -> ``add``."""
    name = op.split(" ")[0].removeprefix("aten::").split(".")[0]
    return name.rstrip("_") or name


def overload_of(label: str) -> str:
    """``aten::mm [CUDA]`` -> ``mm``; ``aten::add.Tensor [CUDA]`` -> ``add.Tensor`` (the oracle's spelling)."""
    return label.split(" ")[0].removeprefix("aten::")


class TreeGlobals(TreeText):
    """The tree's text, plus the names of the ``__global__`` functions it defines (outside tests), as
    bench_truth reads them (macro-made kernels included): what counts as in-tree is decided from the
    tree, not from atenmap."""

    def has_global(self, name: str) -> bool:
        return bool(self.global_files(name))


def category(kernel: str, text: TreeGlobals, kind: str | None = None) -> str:
    """``memory`` (the oracle's ``kind``: memcpy / memset), ``in-tree`` or ``library``."""
    name = kernel.strip()
    if kind in ("memcpy", "memset"):
        return "memory"
    if ATEN_NS.search(name):
        return "in-tree"
    plain = name.replace("(anonymous namespace)", "anon")
    head = plain.split("(")[0].split("<")[0].split()[-1] if plain.split("(")[0].split("<")[0].split() else name
    function = head.rsplit("::", 1)[-1]
    if function and text.has_global(function):
        return "in-tree"
    jit = JITERATOR.match(name)
    if jit and "(" not in name and text.has_string(jit.group(1)):
        return "in-tree"
    return "library"


def plain_category(kernel: str, text: TreeGlobals, kind: str | None = None) -> str:
    """Issue 38's plain rule: ``memory`` (memcpy / memset), ``in-tree`` when the function name is a token
    of the tree's aten/src and no vendor marker claims the kernel, else ``library``."""
    if kind in ("memcpy", "memset"):
        return "memory"
    plain = kernel.strip().replace("(anonymous namespace)", "anon")
    words = plain.split("(")[0].split("<")[0].split()
    function = (words[-1] if words else plain).rsplit("::", 1)[-1]
    return "in-tree" if function and text.has_token(function) and vendor_family(kernel) is None else "library"


def load_names(oracle: dict, in_yaml, text: TreeGlobals, rule: str = "ours") -> tuple[list[dict], dict]:
    """One record per (kernel name, dtype): its truth ops, its launches; and what was set apart.
    ``in_yaml``: whether the tree's native_functions.yaml declares an op (never atenmap's answer);
    ``rule``: ``ours`` (:func:`category`) or ``plain`` (:func:`plain_category`)."""
    rows: dict[tuple[str, str], dict] = {}
    apart: dict[str, int] = defaultdict(int)
    for p in oracle["pairs"]:
        cat = (plain_category if rule == "plain" else category)(p["kernel"], text, p.get("kind"))
        if cat == "memory" and rule != "plain":
            apart["memcpy/memset"] += 1
            continue
        if p["op"] is None:
            apart["launched outside any op"] += 1
            continue
        if not in_yaml(p["op"]):
            apart["op not in this tree"] += 1
            continue
        r = rows.setdefault((p["kernel"], p["dtype"]), {"kernel": p["kernel"], "dtype": p["dtype"],
                                                        "category": cat, "ops": set(), "count": 0})
        r["ops"].add(p["op"])
        r["count"] += p["count"]
    return sorted(rows.values(), key=lambda r: (r["dtype"], r["kernel"])), dict(apart)


def score(row: dict, match) -> dict:
    """The verdicts of one name: which columns it passes (``match`` None: atenmap gave no answer)."""
    labels = list(match.operators) if match is not None else []
    truth = row["ops"]
    bases = {base_of(o) for o in truth}
    over = [overload_of(x) for x in labels]
    base = [base_of(x) for x in labels]
    v = {"first": bool(over) and over[0] in truth, "first_base": bool(base) and base[0] in bases,
         "top3": any(o in truth for o in over[:3]), "top3_base": any(b in bases for b in base[:3])}
    if row["category"] == "in-tree":
        v["source"] = match is not None and bool(match.definition or match.launches or match.functors
                                                 or match.library_calls)
    else:
        v["library"] = match is not None and match.library is not None
    v["answer"] = labels[:5]
    v["library_named"] = match.library if match is not None else None
    return v


def passes(rows: list[dict]) -> tuple[str, ...]:
    """The dtype passes the rows hold, the first oracle's order first (float16, float32+backward ...)."""
    seen = {r["dtype"] for r in rows}
    return tuple(d for d in DTYPES if d in seen) + tuple(sorted(seen - set(DTYPES)))


def _groups(rows: list[dict]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    extra = (("memory", LIBRARY_COLUMNS),) if any(r["category"] == "memory" for r in rows) else ()
    return (("in-tree", IN_TREE_COLUMNS), ("library", LIBRARY_COLUMNS), *extra)


def table(rows: list[dict]) -> dict:
    out = {}
    for cat, cols in _groups(rows):
        for dtype in passes(rows):
            rs = [r for r in rows if r["category"] == cat and r["dtype"] == dtype]
            names = len(rs)
            events = sum(r["count"] for r in rs)
            cell = {"names": names, "events": events}
            for c in cols:
                cell[c] = round(100.0 * sum(r["verdict"][c] for r in rs) / names, 1) if names else None
                cell[c + "_events"] = (round(100.0 * sum(r["count"] for r in rs if r["verdict"][c]) / events, 1)
                                       if events else None)
            out[f"{cat} {dtype}"] = cell
    return out


def print_table(t: dict, dtypes: tuple[str, ...] = DTYPES, groups=None) -> None:
    heads = {"source": "source", "first": "first", "first_base": "first(b)", "top3": "top3", "top3_base": "top3(b)",
             "library": "library"}
    for cat, cols in groups or (("in-tree", IN_TREE_COLUMNS), ("library", LIBRARY_COLUMNS)):
        print(f"\n{cat}: % of kernel names (% of kernel events)")
        print(f"  {'dtype':<9} {'names':>5} {'events':>6}  " + "  ".join(f"{heads[c]:>14}" for c in cols))
        for dtype in dtypes:
            cell = t[f"{cat} {dtype}"]
            vals = "  ".join(f"{_pct(cell[c]):>5} ({_pct(cell[c + '_events']):>5})  " for c in cols)
            print(f"  {dtype:<9} {cell['names']:>5} {cell['events']:>6}  {vals}")
    print("(first/top3: by overload, as the oracle records it; (b): by base name, 'add_.Tensor' ~ 'add.out')")


def _pct(x) -> str:
    return "-" if x is None else f"{x:.1f}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tree", required=True, help="PyTorch source tree (scripts/fetch-pytorch-src 2.6.0)")
    ap.add_argument("--oracle", default=str(DEFAULT_ORACLE))
    ap.add_argument("--json", help="write every name's verdict here")
    ap.add_argument("--misses", type=int, default=0, help="list this many misses of each category")
    ap.add_argument("--rule", choices=("ours", "plain"), default="ours",
                    help="what counts as in-tree: ours (the default) or issue 38's plain rule")
    a = ap.parse_args(argv)

    sys.path.insert(0, str(REPO / "src"))
    from atenmap.api import Index
    from atenmap.errors import AtenmapError

    oracle = load_oracle(a.oracle)  # plain or .gz (the half/backward oracle)
    ix = Index.open(a.tree)
    text = TreeGlobals(a.tree)
    rows, apart = load_names(oracle, text.has_op, text, a.rule)
    times = []
    for r in rows:
        t0 = time.perf_counter()
        try:
            m = ix.kernel(r["kernel"])
        except AtenmapError as exc:  # a name atenmap cannot read: a miss, still in the denominator
            m, r["error"] = None, str(exc)
        times.append(time.perf_counter() - t0)
        r["verdict"] = score(r, m)
    t = table(rows)
    print(f"rule: {a.rule}")
    print_table(t, passes(rows), _groups(rows))
    print(f"\napart: {apart}")
    print(f"lookup: {len(times)} names, mean {1000 * statistics.mean(times):.0f} ms, "
          f"max {1000 * max(times):.0f} ms (one Index, caches shared)")
    if a.misses:
        _print_misses(rows, a.misses)
    if a.json:
        Path(a.json).write_text(json.dumps({"oracle": a.oracle, "tree": a.tree, "rule": a.rule, "table": t, "apart": apart,
                                            "names": [{**r, "ops": sorted(r["ops"])} for r in rows]},
                                           indent=1, sort_keys=True))
        print(f"verdicts: {a.json}")
    return 0


def _print_misses(rows: list[dict], n: int) -> None:
    for cat, col in (("in-tree", "first_base"), ("in-tree", "top3_base"), ("library", "library"),
                     ("library", "top3_base"), ("memory", "library"), ("memory", "top3_base")):
        miss = [r for r in rows if r["category"] == cat and not r["verdict"][col]]
        print(f"\n{cat} misses of {col} ({len(miss)}):")
        for r in miss[:n]:
            print(f"  {r['dtype'][:4]} {sorted(r['ops'])[:3]} <- {r['kernel'][:150]}")
            print(f"       answer: {r['verdict']['answer'][:4]} lib={r['verdict']['library_named']}")


if __name__ == "__main__":
    sys.exit(main())
