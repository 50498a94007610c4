"""Record what a user sees, to prove a rebuild changed none of it (issue 32's guard).

    .venv/bin/python bench/guard_answers.py --out /tmp/guard-new            # this checkout
    .venv/bin/python bench/guard_answers.py --out /tmp/guard-base --code /tmp/base-checkout
    diff -r /tmp/guard-base /tmp/guard-new

One file per answer, named after what was asked, holding the command's exit status, stdout and
stderr, byte for byte (the cache folder written ``<cache>``, this checkout's folder ``<repo>``):
  chain   ``atenmap chain OP --json`` for 60 operators (those the tests name, and 30 drawn with a
          fixed seed from the 2.6.0 yaml) on the 2.6.0 tree, the 1.13.1 tree and the bundled
          index; on 2.6.0 also ``--key CUDA --json``, ``--key CUDA --why --json`` and the text
          answer (``--wide``, ``COLUMNS=200``)
  kernel  ``atenmap kernel NAME --json`` for 50 kernel names (the profiler names of
          fixtures/kernel_names_h200_torch2.11.txt and 20 drawn from the GPU oracle's kernels)
  trace   ``atenmap kernel --from-trace F --json`` for every trace of fixtures/trace
  compile ``atenmap chain OP --compile --json`` for the first 12 operators on the 2.6.0 tree, the
          1.13.1 tree (no torch/_inductor) and the bundled index, and the text answer on 2.6.0
          (the torch.compile facts, made when first asked: issue 37)
With ``--facts`` also bench/dump_facts.py's dump of the 2.6.0 tree (and of its torchgen output when
the codegen cache holds it). The trees come from scripts/fetch-pytorch-src. Each run uses its own
cache folder (``--cache``, default a new temporary one), so two checkouts never share an index.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# Operators the tests and docs name (tests/test_*.py, README, the issues' examples).
NAMED = [
    "add.out", "mul.out", "sub.out", "mm", "mm.out", "addmm.out", "linear", "copy_", "normal_", "mv.out",
    "max", "exp.out", "topk.values", "scaled_dot_product_attention", "relu", "kthvalue.values",
    "cudnn_convolution", "_flash_attention_forward", "_fft_r2c", "_cdist_forward", "softmax.int",
    "conv2d", "amax", "nll_loss_forward", "conv_depthwise3d", "abs", "argmax", "constant_pad_nd",
    "cross_entropy_loss", "embedding",
]
SEED = 32
# stderr lines that tell of a build (the first query of a source builds, and parallel queries may
# wait for each other): the same answer prints them or not depending on the run, so they are dropped.
PROGRESS = re.compile(rb"atenmap: (running|indexing|torchgen ran|waiting for another|unpacking the bundled|no PyTorch source tree found; answering)")


def trees() -> dict[str, Path]:
    out = {}
    for version in ("2.6.0", "1.13.1"):
        path = subprocess.run([str(REPO / "scripts/fetch-pytorch-src"), version], check=True,
                              capture_output=True, text=True).stdout.strip().splitlines()[-1]
        out[version] = Path(path)
    return out


def operators(tree: Path) -> list[str]:
    import yaml

    text = (tree / "aten/src/ATen/native/native_functions.yaml").read_text()
    names = sorted({e["func"].split("(", 1)[0] for e in yaml.safe_load(text) if "func" in e})
    drawn = random.Random(SEED).sample([n for n in names if n not in NAMED], 30)
    return NAMED + drawn


def kernel_names() -> list[str]:
    names = [n for n in (REPO / "fixtures/kernel_names_h200_torch2.11.txt").read_text().splitlines() if n.strip()]
    oracle = json.loads((REPO / "fixtures/oracle/opinfo_cuda_h200_torch2.11.json").read_text())
    pool = sorted({p["kernel"] for p in oracle["pairs"]} - set(names))
    return names + random.Random(SEED).sample(pool, 50 - len(names))


def jobs(tree26: Path, tree113: Path) -> list[tuple[str, list[str], dict]]:
    ops = operators(tree26)
    out = []
    for label, source in (("2.6.0", str(tree26)), ("1.13.1", str(tree113)), ("bundle", None)):
        env = {"ATENMAP_SOURCE": source} if source else {}  # none: the bundled index (the cache is new)
        for op in ops:
            out.append((f"chain/{label}/{op}.json", ["chain", op, "--json"], env))
    env = {"ATENMAP_SOURCE": str(tree26)}
    for op in ops:
        out.append((f"chain/2.6.0-cuda/{op}.json", ["chain", op, "--key", "CUDA", "--json"], env))
        out.append((f"chain/2.6.0-why/{op}.json", ["chain", op, "--key", "CUDA", "--why", "--json"], env))
        out.append((f"chain/2.6.0-text/{op}.txt", ["chain", op, "--wide"], env))
    for label, source in (("2.6.0", str(tree26)), ("1.13.1", str(tree113)), ("bundle", None)):
        cenv = {"ATENMAP_SOURCE": source} if source else {}
        for op in ops[:12]:
            out.append((f"compile/{label}/{op}.json", ["chain", op, "--compile", "--json"], cenv))
    for op in ops[:12]:
        out.append((f"compile/2.6.0-text/{op}.txt", ["chain", op, "--compile", "--wide"], env))
    for i, name in enumerate(kernel_names()):
        out.append((f"kernel/{i:02d}.json", ["kernel", name, "--json"], env))
    for trace in sorted((REPO / "fixtures/trace").iterdir()):
        out.append((f"trace/{trace.name}.json", ["kernel", "--from-trace", str(trace), "--json"], env))
    return out


def run_one(code: Path, cache: Path, out: Path, job: tuple[str, list[str], dict]) -> None:
    name, argv, extra = job
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATENMAP_")}
    env.update(extra, ATENMAP_CACHE=str(cache), COLUMNS="200", ATENMAP_CODEGEN="always",
               PYTHONPATH=str(code / "src"), NO_COLOR="1", TERM="dumb")
    cwd = tempfile.gettempdir()  # no checkout around the cwd
    r = subprocess.run([sys.executable, "-m", "atenmap", *argv], env=env, cwd=cwd, capture_output=True,
                       stdin=subprocess.DEVNULL, timeout=900)
    dest = out / name
    dest.parent.mkdir(parents=True, exist_ok=True)
    stderr = b"".join(line for line in r.stderr.splitlines(keepends=True) if not PROGRESS.match(line))
    text = b"exit %d\n--- stdout\n" % r.returncode + r.stdout + b"\n--- stderr\n" + stderr
    # two runs' caches differ, and so may the checkouts whose fixtures they read (a trace's error names it)
    dest.write_bytes(text.replace(str(cache).encode(), b"<cache>").replace(str(REPO).encode(), b"<repo>"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--code", type=Path, default=REPO, help="checkout whose src/ answers (default: this one)")
    ap.add_argument("--cache", type=Path, help="atenmap cache folder (default: a new temporary one)")
    ap.add_argument("--facts", action="store_true", help="also dump every fact of the 2.6.0 tree")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    cache = args.cache or Path(tempfile.mkdtemp(prefix="atenmap-guard-"))
    t = trees()
    todo = jobs(t["2.6.0"], t["1.13.1"])
    args.out.mkdir(parents=True, exist_ok=True)
    # The first query of each source builds its index: run those alone, then the rest in parallel.
    firsts = {}
    for job in todo:
        kind, label = job[0].split("/")[:2]
        firsts.setdefault(f"compile/{label}" if kind == "compile" else label, job)  # compile: its facts made
    for job in firsts.values():
        run_one(args.code, cache, args.out, job)
    rest = [j for j in todo if j not in firsts.values()]
    with ThreadPoolExecutor(args.jobs) as pool:
        list(pool.map(lambda j: run_one(args.code, cache, args.out, j), rest))
    if args.facts:
        env = dict(os.environ, PYTHONPATH=str(args.code / "src"))
        subprocess.run([sys.executable, str(REPO / "bench/dump_facts.py"), "--code", str(args.code),
                        "--tree", str(t["2.6.0"]), "--out", str(args.out / "facts-2.6.0.txt")], check=True, env=env)
    print(f"{len(todo)} answers in {args.out} (cache {cache})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
