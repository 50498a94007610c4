"""Score the runs block's FIRST entries against what really ran on the GPU (issue 33's precision).

    .venv/bin/python bench/bench_first.py --tree $(scripts/fetch-pytorch-src 2.6.0) [--dtype] [--show N] [--json OUT]

A case is one OpInfo at one dtype of the GPU oracle (fixtures/oracle/opinfo_cuda_h200_torch2.11.json,
bench/oracle_record.py) whose kernels all ran under one top-level ATen op (``top``): a single-op
case. What ran is the oracle's own record of the case, read here without atenmap: its kernels'
function names (the last component before the template arguments of the demangled name), the library
family a vendor kernel's name tells (bench_truth.vendor_family), jiterator kernels
(``<fn>_kernel``/``<fn>_vectorized<N>_kernel``) and whether a memcpy or memset ran.

atenmap answers ``Index.chain(top, keys=["CUDA"])`` (with ``--dtype``: also the case's dtype); its
runs block's entries for the CUDA key are matched in order:
  launch   the kernel's name (before ``<<<``) is a function name that ran
  jit      ``<fn>`` with ``<fn>_kernel`` or ``<fn>_vectorized<N>_kernel`` among what ran
  library  the step's library family (bench_truth.family_of_step over the step's symbol and detail)
           is a family that ran (cuSOLVER/MAGMA: also cuBLAS, vendor behaviour)
  memcpy / memset calls   a memcpy / memset ran
  kernel   (a key that launches nothing) never a hit
A case whose chain fails (unknown operator, error) or has no runs counts as a miss: the
denominator is every single-op case. Prints first-entry and first-three rates; exit 0 always.

The oracle ran torch 2.11; the tree may be older. A second line scores the *in-tree* cases only
(issue 38's plain rule, read without atenmap): the case's operator is a ``func:`` of the tree's
native_functions.yaml, and something that ran can be named from the tree: a kernel function whose
name is a word of the tree's ATen sources (a jiterator kernel's ``<name>_vectorized<N>_kernel``: its
``<name>``), a library family, a memcpy or a memset. A case that ran
only kernels the tree does not have by that name (torch 2.11's ``CatArrayBatchedCopy_alignedK_contig``
for cat) or whose operator is newer than the tree (``hash_tensor``) cannot be predicted from it.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

from bench_truth import DEFAULT_ORACLE, RUNS, _strip, family_of_step, jit_kernel_of, load_oracle, vendor_family  # noqa: E402


def kernel_function(kernel: str) -> str:
    """'void at::native::reduce_kernel<512, ...>(...)' -> 'reduce_kernel'."""
    parts = _strip(kernel)
    last = parts[-1] if parts else kernel
    return last.rsplit(" ", 1)[-1]


def cases(oracle: dict) -> dict[tuple[str, str], dict]:
    """(opinfo, dtype) -> {"top", "functions", "families", "memcpy", "memset"} for single-op cases."""
    grouped = defaultdict(list)
    for p in oracle["pairs"]:
        if "+" in p["dtype"]:  # a recording with the backward pass (float32+backward): no single-op case
            continue
        grouped[(p["opinfo"], p["dtype"])].append(p)
    out = {}
    for key, pairs in sorted(grouped.items()):
        tops = {p["top"] for p in pairs if p.get("op")}
        if len(tops) != 1 or any(not p.get("op") for p in pairs):
            continue
        ran = {"top": tops.pop(), "functions": set(), "families": set(), "memcpy": False, "memset": False}
        for p in pairs:
            kind = p.get("kind")
            if kind in ("memcpy", "memset"):
                ran[kind] = True
                continue
            family = vendor_family(p["kernel"])
            if family:
                ran["families"].update(family.split("/"))
            ran["functions"].add(kernel_function(p["kernel"]))
        for fam in list(ran["families"]):
            ran["families"] |= RUNS.get(fam, set())
        out[key] = ran
    return out


_SOURCES = (".cpp", ".cu", ".cuh", ".h", ".hpp", ".mm", ".metal")


def tree_words(tree: Path) -> tuple[set[str], set[str]]:
    """(every identifier of the tree's ATen sources, the base names of its native_functions.yaml's
    operators), read as text."""
    words: set[str] = set()
    for f in (tree / "aten" / "src" / "ATen").rglob("*"):
        if f.suffix in _SOURCES and f.is_file():
            words.update(re.findall(r"[A-Za-z_]\w*", f.read_text("utf-8", "replace")))
    yaml_text = (tree / "aten" / "src" / "ATen" / "native" / "native_functions.yaml").read_text()
    ops = set(re.findall(r"^- func: ([A-Za-z_]\w*)", yaml_text, re.M))
    return words, ops


def in_tree(ran: dict, words: set[str], ops: set[str]) -> bool:
    """Issue 38's plain rule for a case: see the module's doc."""
    if ran["top"].split(".", 1)[0] not in ops:
        return False
    return bool(ran["memcpy"] or ran["memset"] or ran["families"]
                or any(f in words or _JIT_NAME.fullmatch(f) and _JIT_NAME.fullmatch(f).group(1) in words
                       for f in ran["functions"]))


# a jiterator kernel's runtime name: the name string of its code, then ``_vectorized<N>_kernel`` or ``_kernel``
_JIT_NAME = re.compile(r"(\w+?)_(?:vectorized\d+_)?kernel")


def _launch_name(name: str) -> str:
    return re.split(r"[<(\s]", name.strip(), maxsplit=1)[0].rsplit("::", 1)[-1]


def hit(run, detail: str, ran: dict) -> bool:
    role = str(run.role)
    low = run.name.lower()
    if "memcpy" in low:
        return ran["memcpy"]
    if "memset" in low:
        return ran["memset"]
    if role == "launch":
        return _launch_name(run.name) in ran["functions"]
    if role == "jit":
        return any(jit_kernel_of(run.name, f) for f in ran["functions"])
    if role == "library":
        family = family_of_step(run.name, detail)
        return family is not None and family in ran["families"]
    return False


def details(chain) -> dict[tuple, str]:
    """(file, line, symbol) of every library step -> its detail (the library's name)."""
    out = {}
    for kc in chain.keys:
        for top in kc.steps:
            for s in top.walk():
                if str(s.role) == "library" and s.loc:
                    out[(s.loc.file, s.loc.line, s.symbol)] = s.detail
    return out


def score(ix, all_cases: dict, with_dtype: bool) -> list[dict]:
    from atenmap.resolve.callfacts import DTYPES, CallFacts

    rows = []
    for (opinfo, dtype), ran in all_cases.items():
        row = {"opinfo": opinfo, "dtype": dtype, "top": ran["top"], "first": False, "first3": False,
               "any": False, "runs": [], "error": None}
        try:
            kwargs = {"facts": CallFacts(dtype=DTYPES[dtype])} if with_dtype else {}
            chain = ix.chain(ran["top"], keys=["CUDA"], **kwargs)
        except Exception as exc:  # the scored code's failure is a miss; the bench must go on
            row["error"] = f"{type(exc).__name__}: {exc}"
            rows.append(row)
            continue
        det = details(chain)
        runs = [r for r in chain.runs if r.key == "CUDA"] or list(chain.runs)
        hits = [hit(r, det.get((r.file, r.line, r.name), ""), ran) for r in runs]
        row.update(first=bool(hits[:1] and hits[0]), first3=any(hits[:3]), any=any(hits),
                   runs=[f"{r.role}:{r.name}" for r in runs[:3]])
        rows.append(row)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tree", required=True)
    ap.add_argument("--oracle", default=str(DEFAULT_ORACLE))
    ap.add_argument("--dtype", action="store_true", help="also score with the case's dtype given")
    ap.add_argument("--show", type=int, default=0, help="print N missed cases")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    # The chains of 2.6.0 reach many kernels only through torchgen's output (add.out: UfuncCUDA_add.cu),
    # which atenmap generates only with consent; without it the figures drop by about 5 points.
    os.environ.setdefault("ATENMAP_CODEGEN", "always")
    sys.path.insert(0, str(REPO / "src"))
    from atenmap.api import Index

    all_cases = cases(load_oracle(args.oracle))
    words, ops = tree_words(Path(args.tree))
    inside = {key for key, ran in all_cases.items() if in_tree(ran, words, ops)}
    ix = Index.open(args.tree)
    out = {}
    for with_dtype in (False, True) if args.dtype else (False,):
        t = time.perf_counter()
        rows = score(ix, all_cases, with_dtype)
        n = len(rows)
        first = sum(r["first"] for r in rows)
        first3 = sum(r["first3"] for r in rows)
        anyhit = sum(r["any"] for r in rows)
        label = "with --dtype" if with_dtype else "no dtype"
        print(f"{label}: {n} single-op cases; first entry ran {first} ({100 * first / n:.1f}%), one of the first "
              f"three {first3} ({100 * first3 / n:.1f}%), any entry {anyhit} ({100 * anyhit / n:.1f}%); "
              f"{time.perf_counter() - t:.0f} s")
        mine = [r for r in rows if (r["opinfo"], r["dtype"]) in inside]
        m = len(mine) or 1
        print(f"{label}, in-tree cases only: {len(mine)}; first entry ran {sum(r['first'] for r in mine)} "
              f"({100 * sum(r['first'] for r in mine) / m:.1f}%), one of the first three "
              f"{sum(r['first3'] for r in mine)} ({100 * sum(r['first3'] for r in mine) / m:.1f}%), any entry "
              f"{sum(r['any'] for r in mine)} ({100 * sum(r['any'] for r in mine) / m:.1f}%)")
        for r in rows:
            r["in_tree"] = (r["opinfo"], r["dtype"]) in inside
        for r in [r for r in rows if not r["first"]][:args.show]:
            print(f"  miss {r['opinfo']} [{r['dtype']}] top={r['top']}: {r['error'] or r['runs']}")
        out[label] = rows
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
