"""How often the query-driven preview (preview.py) equals the complete hand-written answer.

    .venv/bin/python bench/bench_preview.py                   # 2.6.0, the op set below
    .venv/bin/python bench/bench_preview.py --tree ~/pytorch --show-diff

Builds the tree's --no-codegen index in a private temporary cache, then for each operator prints
whether the chain from the preview's files (default keys, as ``atenmap OP``) is line for line the
chain of the full index, the preview's file count, and its CPU seconds in this process (the yaml,
the scan, the parse of its files, the chain). Results: docs/performance.md, "Query-driven preview".
"""
from __future__ import annotations

import argparse
import difflib
import os
import sys
import tempfile
import time
from pathlib import Path

# Picked broadly before measuring (elementwise, reductions, scans, BLAS, conv, indexing, sort,
# norms, linalg, pooling, factories), not tuned afterwards.
OPS = ["mul.out", "add.out", "sub.Tensor", "div.Tensor", "mm", "bmm", "addmm", "matmul", "softmax.int", "_softmax",
       "log_softmax.int", "conv2d", "convolution", "index.Tensor", "index_select", "gather", "scatter.src", "sort",
       "topk", "cumsum", "cumprod", "norm.ScalarOpt_dim", "linalg_vector_norm", "native_layer_norm",
       "native_batch_norm", "relu", "gelu", "sigmoid", "tanh", "exp", "sum.dim_IntList", "mean.dim", "max.dim",
       "argmax", "linalg_solve_ex", "linalg_cholesky_ex", "linalg_qr", "embedding", "where.self", "clamp",
       "copy_", "fill_.Scalar", "nonzero", "upsample_bilinear2d", "max_pool2d_with_indices", "avg_pool2d"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", type=Path, default=Path.home() / ".cache/atenmap/test-trees/pytorch-2.6.0")
    ap.add_argument("--show-diff", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="atenmap-bench-preview-") as cache:
        os.environ["ATENMAP_CACHE"] = cache
        from atenmap import preview
        from atenmap.api import Index
        from atenmap.cli.chain_run import load_chain_for
        from atenmap.source.find import find_source
        from atenmap.views import text as render

        info = find_source(str(args.tree))
        full = Index.open(info, codegen=False)
        same = 0
        rows = []
        for op in OPS:
            want = "\n".join(render.chain_lines(load_chain_for(full, op, None, 8, note=lambda _m: None)[0]))
            t0 = time.process_time()
            with preview.partial_index(info, op, None) as got:
                if got is None:
                    got_text, files = None, "-"
                else:
                    ix, closure = got
                    got_text = "\n".join(render.chain_lines(load_chain_for(ix, op, None, 8, note=lambda _m: None)[0]))
                    files = len(closure.files)
            cpu = time.process_time() - t0
            verdict = "skipped" if got_text is None else "identical" if got_text == want else "differs"
            same += verdict == "identical"
            rows.append((op, verdict, files, cpu))
            print(f"{op:28} {verdict:9} files {files!s:>3}  cpu {cpu:.2f} s", flush=True)
            if verdict == "differs" and args.show_diff:  # noqa
                sys.stdout.writelines(l + "\n" for l in difflib.unified_diff(
                    want.splitlines(), got_text.splitlines(), "complete", "preview", lineterm="", n=0))
        full.close()
        shown = sum(r[1] != "skipped" for r in rows)
        print(f"identical: {same}/{len(OPS)} ({100 * same / len(OPS):.0f}%); previews shown {shown}, "
              f"identical among them {same}/{shown}")


if __name__ == "__main__":
    main()
