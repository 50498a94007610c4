"""The first complete answer from the pre-scan's candidates (src/atenmap/exactfirst.py, Note [A
complete answer from the candidates]) against the full index's, byte for byte, in one process.

    .venv/bin/python bench/compare_first.py                       # 2.6.0, guard_answers' 60 operators
    .venv/bin/python bench/compare_first.py --no-codegen --op mul.out

For each operator, ``atenmap chain OP --json``, ``--key CUDA --json`` and ``--key CUDA --why --json``
(stdout and stderr, as cli/chain_run.show_chain prints them) from the full index of the tree (built
first, in ``$ATENMAP_CACHE``) and from a ``first_index`` over the same tree, which never reads the
full index; the tree's files are read and scanned once for all operators. Prints, per answer,
``same``, ``DIFFERS`` or ``full path`` (the LazyStore met a question it cannot answer exactly: the
CLI would then answer from the full index), the files parsed, and the counts. Exit 1 when an
answer that the fast path would give differs.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def _answer(show, ix, op: str, key, why: bool) -> str:
    from atenmap.errors import AtenmapError

    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            show(op, key, 8, False, None, False, None, True, "json", None, False, why=why, _ix=ix, _preview=False)
        except AtenmapError as exc:
            code = 1
            err.write(f"error: {exc}\n")
    return f"{code}\n{out.getvalue()}\n--stderr--\n{err.getvalue()}"


def main() -> int:
    from guard_answers import operators, trees

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tree", type=Path, help="default: the 2.6.0 tree of scripts/fetch-pytorch-src")
    ap.add_argument("--op", action="append", help="operators (default: guard_answers' 60)")
    ap.add_argument("--no-codegen", action="store_true")
    ap.add_argument("--out", type=Path, help="write each differing pair here")
    args = ap.parse_args()

    from atenmap.api import Index
    from atenmap.cli.chain_run import show_chain
    from atenmap.exactfirst import TreeFiles, first_index, generated_files
    from atenmap.indexstate import codegen_decision
    from atenmap.source.find import find_source

    tree = args.tree or trees()["2.6.0"]
    ops = args.op or operators(tree)
    info = find_source(str(tree), bundled=False)
    decision = codegen_decision(info, False if args.no_codegen else "always")
    full = Index.open(info, codegen=decision)
    files = TreeFiles(Path(info.root), generated_files(info, decision)[0], keep_parsed=True)
    counts = {"same": 0, "DIFFERS": 0, "full path": 0}
    for op in ops:
        for key, why in ((None, False), (["CUDA"], False), (["CUDA"], True)):
            label = f"{op} {'--key CUDA ' if key else ''}{'--why' if why else ''}".strip()
            want = _answer(show_chain, full, op, key, why)
            t0 = time.perf_counter()
            with first_index(info, decision, files=files) as (ix, lazy):
                got = _answer(show_chain, ix, op, key, why)
            took = time.perf_counter() - t0
            verdict = "full path" if not lazy.exact else "same" if got == want else "DIFFERS"
            counts[verdict] += 1
            why_not = f" ({'; '.join(sorted(set(lazy.inexact_questions))[:3])})" if not lazy.exact else ""
            print(f"{verdict:9} {label:45} {len(lazy.loaded):5} files ({len(lazy.entered):4} whole) {took:6.2f} s{why_not}",
                  flush=True)
            if verdict == "DIFFERS" and args.out:
                args.out.mkdir(parents=True, exist_ok=True)
                name = label.replace(" ", "_").replace("/", "_")
                (args.out / f"{name}.full").write_text(want)
                (args.out / f"{name}.first").write_text(got)
    full.close()
    files.close()
    print(" ".join(f"{k}: {v}" for k, v in counts.items()))
    return 1 if counts["DIFFERS"] else 0


if __name__ == "__main__":
    sys.exit(main())
