"""Bench: the speed guards that used to be assertions in tests (a test asserts behaviour, never a duration).

    .venv/bin/python bench/bench_guards.py [--source TREE]

Each row is a ratio against a baseline measured in the same run, so a loaded machine moves both:
  kernel names   the worst pathological name of tests/test_kernelname.py (PATHOLOGICAL) against
                 parsing a real 4-template-level kernel name 1000 times
  nesting        parsing a name nested 8000 deep against 4000 deep (linear: about 2, quadratic: 4)
  native yaml    load_operators of the tree's native_functions.yaml against yaml.safe_load of the same text
  search         Index.search("softmax") (all kinds, and ops on CUDA) against one chain query
With ``--source`` (or the 2.6.0 tree of scripts/fetch-pytorch-src) the last two run on that tree.
Prints one line per row and the limits the tests used to assert; exit status 1 when one is over.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO))

REAL_NAME = ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
             "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)")


def best(fn, repeat: int = 3) -> float:
    out = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out = min(out, time.perf_counter() - t)
    return out


def kernel_rows() -> list[tuple[str, float, float, float]]:
    from atenmap.resolve.kernelname import parse_kernel_name
    from tests.test_kernelname import PATHOLOGICAL

    base = best(lambda: [parse_kernel_name(REAL_NAME) for _ in range(1000)])
    worst, which = max((best(lambda t=t: parse_kernel_name(t), 1), k) for k, t in PATHOLOGICAL.items())
    nest = lambda d: "void f<" + "a::b<" * d + "c" + ">" * (d + 1) + "(int)"  # noqa: E731
    small, large = best(lambda: parse_kernel_name(nest(4000))), best(lambda: parse_kernel_name(nest(8000)))
    return [(f"kernel names: worst pathological ({which}) / 1000 real names", worst, base, 20.0),
            ("nesting: 8000 deep / 4000 deep", large, small, 3.5)]


def tree_rows(tree: Path) -> list[tuple[str, float, float, float]]:
    import yaml

    from atenmap.api import Index
    from atenmap.extract.native_yaml import load_operators

    path = tree / "aten/src/ATen/native/native_functions.yaml"
    text = path.read_text()
    parse = best(lambda: load_operators(path, tree))
    plain = best(lambda: yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)))
    rows = [("native yaml: load_operators / yaml load", parse, plain, 10.0)]
    with Index.open(tree) as ix:
        ix.chain("mul.out", keys=["CUDA"])  # warm the operator table
        chain = best(lambda: ix.chain("mul.out", keys=["CUDA"]))
        rows.append(("search softmax (ops, CUDA) / one chain", best(lambda: ix.search("softmax", kinds=("op",), key="CUDA")),
                     chain, 5.0))
        rows.append(("search softmax (all kinds) / one chain", best(lambda: ix.search("softmax")), chain, 10.0))
    return rows


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--source", help="a PyTorch tree (default: scripts/fetch-pytorch-src 2.6.0)")
    a = p.parse_args()
    rows = kernel_rows()
    tree = a.source
    if tree is None:
        r = subprocess.run([str(REPO / "scripts" / "fetch-pytorch-src"), "2.6.0"], capture_output=True, text=True)
        tree = r.stdout.strip() if r.returncode == 0 else None
    if tree:
        rows += tree_rows(Path(tree))
    over = 0
    for name, t, base, limit in rows:
        ratio = t / base if base else float("inf")
        over += ratio > limit
        print(f"{name:58s} {t * 1000:9.1f} ms / {base * 1000:8.1f} ms = {ratio:6.2f}  (limit {limit})")
    return 1 if over else 0


if __name__ == "__main__":
    raise SystemExit(main())
