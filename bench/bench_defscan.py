"""The exact definition pre-scan (src/atenmap/defscan.py, issue 37 item 1) against ctags, and the files a
lookup would parse with it instead of the token rule.

    .venv/bin/python bench/bench_defscan.py                         # 2.6.0, mul.out --key CUDA
    .venv/bin/python bench/bench_defscan.py --op mm --op add.out --key CUDA
    .venv/bin/python bench/bench_defscan.py --tree ~/.cache/atenmap/test-trees/pytorch-1.13.1

In one run, alternately (``--runs``, default 3): ``ctags -R aten/src/ATen`` (CPU and wall, as
bench_speed.py runs it) and ``defscan.Candidates`` over every tree file of the index (read + scan,
in this process: CPU and wall). Then, on the full ``--no-codegen`` index (built in a private
temporary cache), the chain of each ``--op`` (``--key`` as given) is made with the store's name
lookups recorded (bench_exact.py's recording), and for each lookup:
- token rule: the files holding the looked-up word (and a ``by_name_qual``'s class) as a token,
  the rule of issue 24's floor;
- pre-scan: the files whose scan names the word (a ``by_name_qual``'s class still by token: a
  member defined out of its class names only ``operator``/the member); a lookup of a kind the scan
  does not cover (defscan.KINDS: ``torch_impl``) keeps the token rule for that name;
- entered: the files of the facts the lookups returned (what the full extractor must read).
Their unions are printed with sizes and tree-sitter's own parse and query CPU of those files
(bench_exact.floor_per_file), split over ``--cores``: a floor, with no Python work.
The box may be shared: every ratio is to ctags measured in the same run.
"""
from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
_TOKEN = re.compile(rb"[A-Za-z_]\w*")


def scan_all(tree: Path, rels: list[str]):
    """(Candidates of every file, CPU s, wall s): the files read and scanned in this process."""
    from atenmap.defscan import Candidates

    c0, w0 = time.process_time(), time.perf_counter()
    cands = Candidates()
    for rel in rels:
        with open(tree / rel, "rb") as fh:
            cands.add(rel, fh.read())
    return cands, time.process_time() - c0, time.perf_counter() - w0


def recording(store) -> list[tuple[str, str, tuple, str, list]]:
    """The name lookups made on this store object: (method, name, kinds, suffix or '', rows returned)."""
    seen: list[tuple[str, str, tuple, str, list]] = []
    for method in ("by_name", "by_name_qual", "has_name"):
        real = getattr(store, method)

        def recorded(name, kinds, *args, _real=real, _method=method, **kw):
            out = _real(name, kinds, *args, **kw)
            seen.append((_method, name, tuple(kinds), args[0] if args and isinstance(args[0], str) else "",
                         out if isinstance(out, list) else []))
            return out

        setattr(store, method, recorded)
    return seen


def main() -> int:
    sys.path.insert(0, str(REPO / "bench"))
    sys.path.insert(0, str(REPO / "src"))
    import bench_exact
    import bench_speed

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", type=Path, default=Path.home() / ".cache/atenmap/test-trees/pytorch-2.6.0")
    ap.add_argument("--op", action="append", help="operators (repeatable; default mul.out)")
    ap.add_argument("--key", action="append", help="dispatch keys (default CUDA)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--cores", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args()
    ops, keys = args.op or ["mul.out"], args.key or ["CUDA"]
    with tempfile.TemporaryDirectory(prefix="atenmap-bench-defscan-") as cache:
        os.environ["ATENMAP_CACHE"] = cache
        from atenmap.api import Index
        from atenmap.cli.chain_run import load_chain_for
        from atenmap.defscan import KINDS, name_key
        from atenmap.source.find import find_source

        full = Index.open(find_source(str(args.tree)), codegen=False)
        rows = list(full.store.conn.execute("SELECT path, language, size FROM files WHERE generated = 0"))
        rels = sorted(p for p, _l, _s in rows if (args.tree / p).is_file())
        languages = {p: lang for p, lang, _s in rows}
        sizes = {p: s for p, _l, s in rows}
        scan_cpu, scan_wall, ctags_wall = [], [], []
        cands = None
        with tempfile.TemporaryDirectory() as tmp:
            for _ in range(args.runs):
                ctags_wall.append(bench_speed.ctags(args.tree, Path(tmp), runs=1))
                cands, cpu, wall = scan_all(args.tree, rels)
                scan_cpu.append(cpu)
                scan_wall.append(wall)
        ccpu, cwall = statistics.median(bench_speed.CTAGS_CPU), statistics.median(ctags_wall)
        scpu, swall = statistics.median(scan_cpu), statistics.median(scan_wall)
        print(f"ctags -R aten/src/ATen: {cwall:.2f} s wall, {ccpu:.2f} s CPU (median of {args.runs})")
        print(f"pre-scan of {len(rels)} files ({sum(sizes[r] for r in rels) / 1e6:.1f} MB): {swall:.2f} s wall "
              f"= {swall / cwall:.2f}x ctags, {scpu:.2f} s CPU = {scpu / ccpu:.2f}x ctags CPU "
              f"(runs: {', '.join(f'{c:.2f}' for c in scan_cpu)} s CPU); peak RSS of this process "
              f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
        holders: dict[str, set[str]] = defaultdict(set)
        for rel in rels:
            for tok in set(_TOKEN.findall((args.tree / rel).read_bytes())):
                holders[tok.decode()].add(rel)
        per_file = bench_exact.floor_per_file(args.tree, rels, languages)
        seen = recording(full.store)
        for op in ops:
            seen.clear()
            load_chain_for(full, op, keys, 8, note=lambda _m: None)
            token: set[str] = set()
            scanned: set[str] = set()
            entered: set[str] = set()
            widened = 0
            for method, name, kinds, suffix, found in seen:
                words = bench_exact.lookup_words(method, name, suffix)
                if not words:
                    continue
                by_token = set.intersection(*(holders.get(w, set()) for w in words))
                token |= by_token
                if not set(kinds) <= set(KINDS):  # torch_impl and the like: the token rule, this name only
                    widened += 1
                    scanned |= by_token
                    continue
                mine = set(cands.files(name_key(name.rsplit("::", 1)[-1])))
                for w in words[1:] if method == "by_name_qual" else ():
                    mine &= holders.get(w, set())
                scanned |= mine
                entered |= {r.file for r in found if not r.generated}
            missing = entered - scanned
            print(f"== {op} --key {','.join(keys)}: {len(seen)} lookups, {widened} of kinds the scan does not "
                  "cover (torch_impl: the token rule for that name)")
            for label, files in (("token rule", token), ("pre-scan candidates", scanned), ("entered", entered)):
                floor = sum(per_file.get(f, 0.0) for f in files)
                print(f"  {label:20} {len(files):5} files {sum(sizes.get(f, 0) for f in files) / 1e6:5.1f} MB  "
                      f"tree-sitter floor {floor:5.2f} s CPU = {floor / args.cores / ccpu:4.2f}x ctags on "
                      f"{args.cores} cores")
            print(f"  entered files outside the candidates: {len(missing)}" + (f" {sorted(missing)[:5]}" if missing else ""))
        full.close()
    print("(the box may be shared: compare only ratios measured in this run)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
