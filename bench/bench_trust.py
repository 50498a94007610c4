"""What issue 23's bounds cost on real input, and what the hostile inputs cost now.

    PYTHONPATH=src python bench/bench_trust.py [TREE ...]   (default: the 2.6.0 and 1.13.1 test trees)

- yaml: native_functions.yaml and derivatives.yaml loaded whole (best of 5), and the part of it
  that is the graph check (Note [Bounded yaml]) on the composed document;
- ``#if``: read_conditions on 20,000 nested levels and on a 20,000-branch ``#elif`` chain (time
  and peak memory), against the real tree's largest file in the same run;
- tar: the peak RSS of refusing a 46 kB .tar.xz holding a 300 MB GNU long name.
"""
from __future__ import annotations

import lzma
import os
import resource
import subprocess
import sys
import tarfile
import tempfile
import time
import tracemalloc
from pathlib import Path

from atenmap.extract import native_yaml as N
from atenmap.extract import preproc
from atenmap.extract.derivatives_yaml import load_derivatives

TREES = [Path("/root/.cache/atenmap/test-trees/pytorch-2.6.0"), Path("/root/.cache/atenmap/test-trees/pytorch-1.13.1")]


def best(fn, n: int = 5) -> float:
    out = float("inf")
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out = min(out, time.perf_counter() - t)
    return out


def yaml_rows(root: Path) -> None:
    nf = root / "aten/src/ATen/native/native_functions.yaml"
    load = best(lambda: N.load_operators(nf, root))
    top = N._Loader(nf.read_text()).get_single_node()
    check = best(lambda: N.check_graph(top, "nf"))
    deriv = best(lambda: load_derivatives(root / "tools/autograd/derivatives.yaml", root))
    print(f"{root.name}: native_functions.yaml {load * 1e3:.0f} ms (graph check {check * 1e3:.1f} ms, "
          f"{check / load:.0%}); derivatives.yaml {deriv * 1e3:.0f} ms")


def measured(fn) -> tuple[float, float]:
    """Seconds (best of 3, untraced) and the peak of Python allocations (a traced run)."""
    dt = best(fn, 3)
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return dt, peak / 1e6


def conditions_rows(root: Path) -> None:
    nested = "".join(f"#if A{i}\n" for i in range(20000)) + "int x;\n" + "#endif\n" * 20000
    elifs = "#if A\n" + "".join(f"#elif B{i}\n" for i in range(20000)) + "#endif\n"
    biggest = max((p for d in ("aten/src/ATen", "torch/csrc") for p in (root / d).rglob("*")
                   if p.suffix in (".cpp", ".h", ".cu", ".cuh") and p.is_file()), key=lambda p: p.stat().st_size)
    real = biggest.read_text(errors="replace")
    for label, text in ((f"real {biggest.name} ({len(real) // 1000} kB)", real),
                        (f"20,000 nested #if ({len(nested) // 1000} kB)", nested),
                        (f"20,000 #elif ({len(elifs) // 1000} kB)", elifs)):
        dt, peak = measured(lambda: preproc.read_conditions(text))
        print(f"read_conditions, {label}: {dt:.2f} s, peak {peak:.1f} MB")


def tar_row() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        archive = Path(tmp, "gnu.tar.xz")
        size = 300 << 20
        with lzma.open(archive, "wb", preset=0) as out:
            h = tarfile.TarInfo("././@LongLink")
            h.size, h.type = size, tarfile.GNUTYPE_LONGNAME
            out.write(h._create_header(h.get_info(), tarfile.GNU_FORMAT, "utf-8", "surrogateescape"))
            for _ in range(size >> 20):
                out.write(b"a" * (1 << 20))
            out.write(tarfile.TarInfo("x").tobuf() + b"\0" * 1024)
        code = ("import resource, sys\nfrom atenmap.cli import main\ntry:\n    main(['fetch', '2.6.0', '--from', "
                f"{str(archive)!r}])\nexcept SystemExit:\n    pass\n"
                "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)")
        env = {**os.environ, "ATENMAP_CACHE": str(Path(tmp, "cache"))}
        t = time.perf_counter()
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        dt = time.perf_counter() - t
        lines = r.stderr.strip().splitlines()
        print(f"tar: {archive.stat().st_size // 1000} kB .tar.xz with a 300 MB long name: {dt:.1f} s, "
              f"peak RSS {int(lines[-1]) / 1024:.0f} MB; {[ln for ln in lines if 'error' in ln][0]}")


def main(argv: list[str]) -> None:
    trees = [Path(a) for a in argv] or [t for t in TREES if t.is_dir()]
    for root in trees:
        yaml_rows(root)
    if trees:
        conditions_rows(trees[0])
    tar_row()
    print(f"(this process: peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB)")


if __name__ == "__main__":
    main(sys.argv[1:])
