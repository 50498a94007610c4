"""Score atenmap's static CUDA chains against a ground-truth oracle recorded on a GPU.

    python bench/bench_truth.py --tree PATH_TO_PYTORCH_2.6.0 \
        [--oracle fixtures/oracle/opinfo_cuda_h200_torch2.11.json] [--json out.json] [--limit N]

The oracle (bench/oracle_record.py) lists pairs (op, kernel): the innermost ATen overload active when
real PyTorch launched that GPU kernel. Pairs are deduplicated by (op, kernel) over ``top`` and dtype.
For each pair, atenmap's chain of ``op`` for the CUDA key is walked. What the kernel IS (ATen's own,
a vendor's, or absent from this tree) is decided from the tree's files and the oracle alone, never from
atenmap's index or answers (class TreeText, Note [Kernels the tree defines], Note [Vendor kernels by
their names]), and the demangled name is split into its function, functors and lambdas by the bench's
own reader (bench/kernel_text.py), never by atenmap's parser: a name atenmap cannot read is still
scored, and missed if its chain lacks the kernel (issue 32, item 5). The pair is:

* skipped: memcpy / memset (the oracle's own ``kind``), and kernels the oracle could not place under
  an op (``op: null``), counted apart;
* skew: the op is not in this tree's native_functions.yaml (read from the file), or a kernel with a
  PyTorch namespace in its name whose function name is nowhere in the tree's aten/src; neither pass
  nor fail. A kernel with no ``__global__`` in the tree, no vendor marker and no PyTorch namespace is
  ``unowned`` (neither pass nor fail);
* in-tree kernel (a ``__global__`` of that name in aten/src, flash / mem-efficient attention
  included; or a PyTorch-namespaced name found in the tree's text): PREDICTED when the chain has a
  ``launch`` step of that ``__global__`` (or a kernel/call/helper step of that name in a file that
  defines it) AND, when the name carries op-specific functors or lambdas (loop machinery excluded),
  a step whose symbol names one of them (the functor's class, the lambda's enclosing function).
  ``generic``: the kernel is defined only in the loop/reduction machinery (GENERIC_FILES);
* jiterator kernel (``<fn>_kernel`` / ``<fn>_vectorized<N>_kernel``, no definition, no namespace, and
  ``"<fn>"`` a string literal of the tree's aten/src): ATen's own code, compiled by NVRTC at run time
  from a ``jiterator_stringify`` string; scored as in-tree. PREDICTED when the chain has a ``jit``
  step whose symbol is that ``<fn>`` exactly. The table's ``jiterator`` column shows predicted/scored
  of these pairs, which are inside the in-tree totals;
* library kernel (no ``__global__`` in the tree, a vendor marker in the name): PREDICTED when the
  chain has a ``library`` step of the same family (FAMILY below), or a ``library`` step of a library
  that runs that family's kernels inside its own calls by documented vendor behaviour (RUNS: cuSOLVER
  and MAGMA run cuBLAS kernels); the latter are counted in the table's ``via lib`` column.

Pairs are distinct (op, kernel) instantiations: two template instantiations of one ``__global__`` are
two pairs. The per-op view counts the ops whose every scored pair is predicted.

Exit status 0 whatever the score: this is a measurement, not a test.
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent))
import kernel_text  # noqa: E402  (the bench's own reading of a kernel name)

REPO = Path(__file__).resolve().parents[1]
DEFAULT_ORACLE = REPO / "fixtures" / "oracle" / "opinfo_cuda_h200_torch2.11.json"
# float16 and float32 with the backward pass (oracle_record.py --dtypes float32+backward,float16), gzip
HALF_BACKWARD = REPO / "fixtures" / "oracle" / "opinfo_cuda_h200_torch2.11_half_backward.json.gz"


def load_oracle(path: str | Path) -> dict:
    """An oracle file, plain or gzip (``.gz``)."""
    import gzip

    p = Path(path)
    return json.loads(gzip.decompress(p.read_bytes()) if p.suffix == ".gz" else p.read_text())

# Library families: one name per vendor library, for the kernel side (VENDOR_MARKERS) and the chain
# side (the detail of a `library` step). The bench's own table: the expected side never reads atenmap's.
# CUTLASS kernels seen from ATen ops run inside cuBLAS (gemm) and cuDNN (convolution): either matches.
FAMILY = {
    "cuBLAS": "cuBLAS", "cuBLASLt": "cuBLAS", "cuBLAS (at::cuda::blas)": "cuBLAS", "CUTLASS": ("cuBLAS", "cuDNN"),
    "cuDNN": "cuDNN", "cuFFT": "cuFFT", "cuSOLVER": "solver", "MAGMA": "solver", "CUB": "CUB", "thrust": "CUB",
    "cuSPARSE": "cuSPARSE", "cuTENSOR": "cuTENSOR", "NCCL": "NCCL", "Triton": "Triton", "MIOpen": "MIOpen",
}
# Generic loops: kernels defined only in these files are the TensorIterator/reduction machinery.
GENERIC_FILES = {"CUDALoops.cuh", "Loops.cuh", "Reduce.cuh", "ROCmLoops.cuh", "MemoryAccess.cuh"}

# Template arguments / lambda scopes that are loop machinery, not the operator's own code.
MACHINERY_FUNCTOR = re.compile(
    r"(OffsetCalculator|LoadWithCast|StoreWithCast|LoadWithoutCast|StoreWithoutCast|func_wrapper_t|ReduceOp|"
    r"ReduceConfig|TensorInfo|Array|array|detail::|memory::|IntDivider|OpaqueType|AccumulateType|opmath|"
    r"WelfordData|c10::|std::|cub::|thrust::|cublas|cudnn|cutlass|Policy\d*$)")
MACHINERY_LAMBDA = {
    "gpu_kernel_impl", "gpu_kernel_impl_nocast", "gpu_kernel", "gpu_kernel_nocast", "gpu_kernel_with_scalars",
    "opmath_gpu_kernel_with_scalars", "opmath_symmetric_gpu_kernel_with_scalars", "launch_legacy_kernel",
    "launch_vectorized_kernel", "launch_unrolled_kernel", "gpu_kernel_multiple_outputs",
    "gpu_kernel_multiple_outputs_impl", "elementwise_kernel_helper", "launch_kernel", "gpu_reduce_kernel",
}
# A kernel name that mentions these namespaces (function or template arguments) is PyTorch's own.
# "(anonymous namespace)" alone is not: cuSOLVER's kernels use it too.
ATEN_NS = re.compile(r"(?:\A|[^\w])(?:at|c10|caffe2|torch|pytorch_flash|PyTorchMemEffAttention|at_cuda_detail)::")
# A kernel declared in these namespaces is PyTorch's own whatever its template arguments say (CUB's
# kernels live in at_cuda_detail::cub, a vendor library renamed by CUB_NS_PREFIX: not listed here).
ATEN_SCOPE = re.compile(r"(?:at|c10|caffe2|torch|pytorch_flash|PyTorchMemEffAttention)::")
# jiterator kernels are compiled at run time (NVRTC) from strings in ATen: "<name>[_vectorized<N>]_kernel"
JITERATOR = re.compile(r"\A(\w+?)_(?:vectorized\d+_)?kernel\Z")


def load_atenmap():
    """Every atenmap import of this bench, in one place: the index, whose chains are what is scored.
    Nothing of the expected side (ownership, skew, the kernel's function, functors and lambdas)
    comes from atenmap."""
    sys.path.insert(0, str(REPO / "src"))
    from atenmap.api import Index
    from atenmap.errors import AtenmapError

    return {"open_index": Index.open, "error": AtenmapError}


class KernelText(NamedTuple):
    """What the scorer needs of an oracle kernel, from the oracle and the name's text alone."""
    kind: str  # "memcpy" / "memset" (the oracle's ``kind``) or "kernel"
    function: str
    functors: tuple[str, ...]
    lambdas: tuple[str, ...]  # the functions enclosing the lambdas


def read_kernel(name: str, kind: str | None = None) -> KernelText:
    """``name`` read by bench/kernel_text.py; ``kind``: the oracle pair's ``kind``, when it has one."""
    if kind in ("memcpy", "memset"):
        return KernelText(kind, "", (), ())
    return KernelText("kernel", kernel_text.function(name), tuple(kernel_text.functors(name)),
                      tuple(kernel_text.lambdas(name)))


# =====================================================================================================

class TreeText:
    """What the tree itself says about a kernel or an operator, read from its files with regular
    expressions (never from atenmap's index): the ``__global__`` functions its aten/src defines
    (Note [Kernels the tree defines] below), the identifiers and string literals there (why a kernel
    has no definition: renamed since this tree, or a name built by a macro), and the operators of
    its native_functions.yaml (an op the tree does not have is skew)."""

    SUFFIXES = (".cu", ".cuh", ".h", ".cpp", ".hpp")

    def __init__(self, tree: str):
        self.tree = Path(tree)
        self._tokens: set[str] | None = None
        self._strings: set[str] = set()
        self._globals: dict[str, list[str]] = defaultdict(list)
        self._ops: set[str] | None = None

    def _load(self) -> None:
        self._tokens = set()
        macros: dict[str, int] = {}  # macro defining a __global__ named by its parameter -> that parameter's index
        texts = []
        for f in sorted((self.tree / "aten" / "src").rglob("*")):
            if f.suffix in self.SUFFIXES and f.is_file() and "/test/" not in str(f):
                text = f.read_text(errors="replace")
                self._tokens.update(re.findall(r"\w+", text))
                self._strings.update(re.findall(r'"(\w+)"', text))
                if "__global__" in text:
                    rel = str(f.relative_to(self.tree))
                    texts.append((rel, text))
                    named_by_macro = set()
                    for m in _GLOBAL_MACRO.finditer(text):
                        params = [x.strip() for x in m.group(2).split(",")]
                        if m.group(3) in params:
                            macros[m.group(1)] = params.index(m.group(3))
                            named_by_macro.add(m.group(3))
                    for m in _GLOBAL_DEF.finditer(_NO_BOUNDS.sub(" ", text)):
                        if m.group(1) not in named_by_macro:
                            self._globals[m.group(1)].append(rel)
        for rel, text in texts if macros else ():
            for m in re.finditer(r"(?<!#define )\b(" + "|".join(map(re.escape, macros)) + r")\(\s*(\w+)\s*[,)]", text):
                if macros[m.group(1)] == 0:
                    self._globals[m.group(2)].append(rel)

    def has_token(self, name: str) -> bool:
        if self._tokens is None:
            self._load()
        return name in self._tokens

    def has_string(self, name: str) -> bool:
        if self._tokens is None:
            self._load()
        return name in self._strings

    def global_files(self, name: str) -> list[str]:
        """The files of aten/src that define ``__global__ ... name(`` (tests left out)."""
        if self._tokens is None:
            self._load()
        return sorted(set(self._globals.get(name, ())))

    def has_op(self, op: str) -> bool:
        """Whether native_functions.yaml declares ``op`` (``add.out``; ``add`` for the overload-less one):
        the file read with pyyaml, each entry's ``func`` up to its ``(``."""
        if self._ops is None:
            import yaml

            path = self.tree / "aten" / "src" / "ATen" / "native" / "native_functions.yaml"
            entries = yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
            self._ops = {str(e["func"]).split("(", 1)[0] for e in entries if isinstance(e, dict) and "func" in e}
        return op in self._ops


# Note [Kernels the tree defines]
# A kernel is ATen's own when aten/src has a ``__global__`` function of that name: written out
# (``template <...> __global__ void __launch_bounds__(...) name(``, ``C10_LAUNCH_BOUNDS_1(...)``
# removed first), or made by a macro whose first parameter names it (flash-attention's
# ``DEFINE_FLASH_FORWARD_KERNEL(flash_fwd_kernel, ...)``). Test files do not count.
_NO_BOUNDS = re.compile(r"(?:__launch_bounds__|C10_LAUNCH_BOUNDS_\d)\s*\((?:[^()]|\([^()]*\))*\)")
_GLOBAL_DEF = re.compile(r"__global__\s+(?:[\w:<>,\s*&]+?\s+)?\**(\w+)\s*(?:<[^;{()]*>\s*)?\(")
_GLOBAL_MACRO = re.compile(r"#define\s+(\w+)\(([^)]*)\)[^\n]*\\\n(?:[^\n]*\\\n)*?[^\n]*__global__\s+void\s+(\w+)\s*\(")

# Note [Vendor kernels by their names]
# A kernel with no ``__global__`` in the tree is a vendor library's; its library is read from its
# name with the markers below (the vendors' own prefixes and parameter types, LAPACK's routine names
# for cuSOLVER), in order. A vendor kernel none of them names is "unowned" (neither pass nor fail).
VENDOR_MARKERS = (
    ("CUB", re.compile(r"(?:\A|[^\w])cub::|\Acub_|thrust::")),
    ("CUTLASS", re.compile(r"\bcutlass(?:::Kernel|_\d)")),
    ("cuDNN", re.compile(r"cudnn|\bimplicit_convolve", re.I)),
    ("MAGMA", re.compile(r"\bmagma_|\Amagma")),
    ("cuSOLVER", re.compile(r"cusolver|\b(?:void )?(?:potrf|getrf|geqr[f2]|larf[gt]?|laswp|orgqr|ormqr|steqr|sytrd|sytrf|"
                            r"gesvd|syevd?|trtri|potrs|getrs)\w*[<(]")),
    ("cuBLAS", re.compile(r"cublas|_cublas\Z|gemvx?::|\bgemv|\bgemm|\btrsm|\btrmv|\bger_kernel|\bdot_kernel|"
                          r"\bscal_kernel|\baxpy|splitKreduce", re.I)),
    ("cuFFT", re.compile(r"\b(?:regular|vector|bluestein)_fft|\bfft\w*_kernel")),
    ("Triton", re.compile(r"\Atriton_")),
)
# Vendor behaviour: cuSOLVER and MAGMA run cuBLAS kernels inside their own calls.
RUNS = {"solver": {"cuBLAS"}}


def vendor_family(kernel: str) -> str | None:
    """The library family a vendor kernel's name tells (FAMILY's values), or None."""
    for lib, rx in VENDOR_MARKERS:
        if rx.search(kernel):
            f = FAMILY[lib]
            return f if isinstance(f, str) else "/".join(f)
    return None


def _strip(sym: str) -> list[str]:
    """'at::native::sum_functor<float>::operator()(x)' -> ['at', 'native', 'sum_functor', 'operator()']."""
    depth, buf = 0, []
    s = sym.split("<<<", 1)[0]
    i = 0
    while i < len(s):
        c = s[i]
        if c == "<":
            depth += 1
        elif c == ">":
            depth = max(0, depth - 1)
        elif depth == 0:
            if c == "(" and not "".join(buf).endswith("operator") and not s.startswith("(anonymous", i):
                break
            buf.append(c)
        i += 1
    text = "".join(buf)
    return [p.strip() for p in text.split("::") if p.strip()]


def _qualifier(kernel: str) -> str:
    """'void at::native::(anonymous namespace)::k<...>(...)' -> 'at::native::(anonymous namespace)':
    the scope the kernel's function is declared in, as its name writes it ('' when none)."""
    qual = "::".join(_strip(kernel))
    qual = qual.replace("(anonymous namespace)", "")
    last = qual.rsplit(" ", 1)[-1]  # after the return type
    return last.rsplit("::", 1)[0] if "::" in last else ""


def _launch_name(sym: str) -> str:
    return re.split(r"[<(\s]", sym.strip(), 1)[0].rsplit("::", 1)[-1]


class ChainFacts:
    def __init__(self, steps, error: str = ""):
        self.steps = steps
        self.error = error  # atenmap's error when it gave no chain (every pair of the op is missed)
        self.launches = {_launch_name(s.symbol) for s in steps if str(s.role) == "launch"}
        self.def_names = {(s.file, (_strip(s.symbol) or [""])[-1]) for s in steps
                          if str(s.role) in ("kernel", "call", "helper")}
        self.comp_sets = [set(_strip(s.symbol)[-2:]) for s in steps]
        self.symbol_last = {(_strip(s.symbol) or [""])[-1] for s in steps}
        self.libraries = [(s.symbol, s.detail) for s in steps if str(s.role) == "library"]
        self.jits = {s.symbol for s in steps if str(s.role) == "jit"}
        self.op_calls = sorted({s.symbol.removeprefix("aten::") for s in steps if str(s.role) == "op_call"})
        self.stub_calls = [s.symbol for s in steps if str(s.role) == "stub_call"]
        self.registers = [s for s in steps if str(s.role) == "register" and "REGISTER_DISPATCH" in s.symbol]

    def names(self, name: str) -> bool:
        return any(name in comps for comps in self.comp_sets)


def family_of_step(symbol: str, detail: str) -> str | None:
    d = (detail or "").strip()
    for cand in (d, d.split(" (", 1)[0], d.split(":", 1)[0]):
        if cand in FAMILY and isinstance(FAMILY[cand], str):
            return FAMILY[cand]
    for k, v in FAMILY.items():
        if isinstance(v, str) and (k.lower() in d.lower() or k.lower() in symbol.lower()):
            return v
    return None


def jit_kernel_of(function: str, kernel: str) -> bool:
    """Whether ``kernel`` is what the jiterator compiles for the jitted ``function``:
    ``<function>_kernel`` or ``<function>_vectorized<N>_kernel``."""
    return kernel == f"{function}_kernel" or re.fullmatch(re.escape(function) + r"_vectorized\d+_kernel", kernel) is not None


def op_specific(kn: KernelText) -> tuple[list[str], list[str]]:
    functors = [f.rsplit("::", 1)[-1] for f in kn.functors if not MACHINERY_FUNCTOR.search(f)]
    lambdas = [name for name in kn.lambdas if name not in MACHINERY_LAMBDA]
    return list(dict.fromkeys(functors)), list(dict.fromkeys(lambdas))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tree", required=True, help="PyTorch source tree (scripts/fetch-pytorch-src 2.6.0)")
    ap.add_argument("--oracle", default=str(DEFAULT_ORACLE))
    ap.add_argument("--json", help="write every pair's verdict here")
    ap.add_argument("--limit", type=int, help="score only the first N distinct (op, kernel) pairs")
    ap.add_argument("--top", type=int, default=30, help="failing ops to list")
    ap.add_argument("--quiet", action="store_true", help="do not list every failure")
    ap.add_argument("--dtype", help="score only the pairs of one recorded pass (float32, bfloat16, float16, "
                                    "float32+backward); the half/backward passes are in --oracle " + HALF_BACKWARD.name)
    a = ap.parse_args(argv)

    am = load_atenmap()
    oracle = load_oracle(a.oracle)
    if a.dtype:
        oracle["pairs"] = [p for p in oracle["pairs"] if p["dtype"] == a.dtype]
    t = time.perf_counter()
    ix = am["open_index"](a.tree)
    t_open = time.perf_counter() - t

    # distinct (op, kernel), with tops / dtypes / opinfos / counts merged
    merged: dict[tuple, dict] = {}
    for p in oracle["pairs"]:
        k = (p["op"], p["kernel"])
        m = merged.setdefault(k, {"op": p["op"], "kernel": p["kernel"], "kind": p.get("kind"), "tops": set(),
                                  "dtypes": set(), "opinfos": set(), "count": 0})
        m["tops"].add(p["top"])
        m["dtypes"].add(p["dtype"])
        m["opinfos"].add(p["opinfo"])
        m["count"] += p["count"]
    pairs = sorted(merged.values(), key=lambda m: (m["op"] or "", m["kernel"]))
    if a.limit:
        pairs = pairs[: a.limit]

    text = TreeText(a.tree)
    chains: dict[str, ChainFacts | str] = {}
    cold, warm = [], []

    def chain_of(op: str):
        if op not in chains:
            if not text.has_op(op):  # the tree's yaml, not atenmap's operator table
                chains[op] = "op not in this tree's native_functions.yaml"
                return chains[op]
            t0 = time.perf_counter()
            try:
                ch = ix.chain(op, keys=["CUDA"])
            except am["error"] as exc:  # the yaml has it, atenmap does not answer: its pairs are missed
                chains[op] = ChainFacts([], error=str(exc))
                return chains[op]
            cold.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            ix.chain(op, keys=["CUDA"])
            warm.append(time.perf_counter() - t0)
            chains[op] = ChainFacts([s for kc in ch.keys for s in kc.walk()])
        return chains[op]

    verdicts, skipped = [], Counter()
    t0 = time.perf_counter()
    for m in pairs:
        v = {"op": m["op"], "kernel": m["kernel"], "tops": sorted(x or "" for x in m["tops"]),
             "dtypes": sorted(m["dtypes"]), "opinfos": sorted(m["opinfos"])[:5], "count": m["count"]}
        verdicts.append(v)
        score_pair(v, read_kernel(m["kernel"], m["kind"]), text, chain_of, skipped)
    t_def = time.perf_counter() - t0 - sum(cold) - sum(warm)

    report(oracle, verdicts, skipped, a, t_open, cold, warm, t_def, len(text._globals))
    if a.json:
        Path(a.json).write_text(json.dumps({"oracle": a.oracle, "tree": a.tree, "summary": summarise(verdicts, skipped),
                                            "verdicts": verdicts}, indent=1, sort_keys=True))
        print(f"\nverdicts: {a.json}")
    return 0


def score_pair(v: dict, kn: KernelText, text: TreeText, chain_of, skipped: Counter) -> None:
    """One pair's verdict (the module's docstring), from the tree's text and the oracle; atenmap's
    chain is only what is scored. ``kn``: the kernel name split into function, functors, lambdas."""
    kernel = v["kernel"].strip()
    v["kind"], v["function"] = kn.kind, kn.function
    if kn.kind in ("memcpy", "memset"):
        v["verdict"], v["reason"] = "skipped", kn.kind
        skipped[kn.kind] += 1
        return
    if v["op"] is None:
        v["verdict"], v["reason"] = "skipped", "unattributed (op null in the oracle)"
        skipped["unattributed"] += 1
        return
    qualifier = _qualifier(kernel)
    family = vendor_family(kernel) if not ATEN_SCOPE.match(qualifier + "::") else None
    files = [] if family else text.global_files(kn.function)
    if files and any(not text.has_token(q) for q in qualifier.split("::") if q and "(" not in q):
        files = []  # cuBLAS's internal::gemvx::kernel is not ATen's __global__ kernel(...)
    owned = bool(ATEN_NS.search(kernel))
    jit = JITERATOR.match(kernel) if not files and family is None and not owned and "(" not in kernel else None
    jit = jit if jit and text.has_string(jit.group(1)) else None
    v["category"] = "library" if family else "in-tree"
    v["generic"] = bool(files) and all(f.rsplit("/", 1)[-1] in GENERIC_FILES for f in files)
    if files:
        v["definition"] = ", ".join(files[:3])
    cf = chain_of(v["op"])
    if isinstance(cf, str):
        v["verdict"], v["reason"] = "skew", cf
    elif family:
        _score_library(v, family, cf)
    elif jit:
        v["jit"] = True
        named = [j for j in sorted(cf.jits) if jit_kernel_of(j, kernel)]
        if named:
            v["verdict"], v["reason"] = "predicted", f"jit step {named[0]} (jiterator, NVRTC at run time)"
        else:
            v["verdict"], v["missing"] = "missed", "jit"
            v["reason"] = (f"jiterator kernel of \"{jit.group(1)}\": no jit step names it; chain has "
                           + (", ".join(sorted(cf.jits)) or "no jit step"))
    elif not files and not owned:
        v["verdict"] = "unowned"
        v["reason"] = f"{kn.function}: no __global__ in the tree, no vendor marker, no PyTorch namespace"
    elif not files and not text.has_token(kn.function):
        v["verdict"], v["reason"] = "skew", f"__global__ {kn.function} not in this tree"
    else:
        _score_in_tree(v, kn, files, cf)
    if not isinstance(cf, str):
        _context(v, cf)


def _score_library(v: dict, family: str, cf: "ChainFacts") -> None:
    fams = tuple(family.split("/"))
    v["family"] = family
    libs = [(d, family_of_step(s, d)) for s, d in cf.libraries]
    runner = next((d for d, f in libs if f and set(fams) & RUNS.get(f, set())), None)
    if any(f in fams for _, f in libs):
        v["verdict"], v["reason"] = "predicted", f"library step of {family}"
    elif runner is not None:
        v["verdict"], v["via_library"] = "predicted", runner
        v["reason"] = f"library step of {runner}, which runs {family} kernels itself"
    else:
        v["verdict"] = "missed"
        v["reason"] = (f"no library step of {family}; chain has "
                       + (", ".join(sorted({f or d for d, f in libs})) or "no library step"))


def _score_in_tree(v: dict, kn: KernelText, files: list[str], cf: "ChainFacts") -> None:
    has_kernel = kn.function in cf.launches or any((f, kn.function) in cf.def_names for f in files)
    functors, lambdas = op_specific(kn)
    anchors = functors + lambdas
    has_anchor = not anchors or any(cf.names(x) for x in anchors)
    v["anchors"] = anchors
    if has_kernel and has_anchor:
        v["verdict"], v["reason"] = "predicted", "launch" + (" + functor/lambda" if anchors else "")
        return
    v["verdict"] = "missed"
    miss = []
    if not files:
        miss.append(f"{kn.function} is in the tree's text but the bench finds no __global__ of it (macro-made?)")
    if not has_kernel:
        miss.append(f"kernel half: no launch of {kn.function}")
    if not has_anchor:
        miss.append(f"functor/lambda half: no step names {' / '.join(anchors)}")
    v["reason"] = "; ".join(miss)
    v["missing"] = "both" if (not has_kernel and not has_anchor) else ("kernel" if not has_kernel else "anchor")


def _context(v: dict, cf: ChainFacts) -> None:
    if v["verdict"] == "predicted":
        return
    v["chain_launches"] = sorted(cf.launches)
    v["chain_op_calls"] = cf.op_calls[:12]
    v["chain_libraries"] = sorted({d for _, d in cf.libraries})
    v["chain_stub_calls"] = cf.stub_calls[:6]
    v["chain_steps"] = len(cf.steps)
    if cf.error:
        v["chain_error"] = cf.error


def summarise(verdicts, skipped) -> dict:
    out = {}
    for cat in ("in-tree", "library"):
        vs = [v for v in verdicts if v.get("category") == cat]
        scored = [v for v in vs if v["verdict"] in ("predicted", "missed")]
        pred = sum(1 for v in scored if v["verdict"] == "predicted")
        out[cat] = {"pairs": len(scored), "predicted": pred,
                    "percent": round(100.0 * pred / len(scored), 1) if scored else None,
                    "skew": sum(1 for v in vs if v["verdict"] == "skew"),
                    "unowned": sum(1 for v in vs if v["verdict"] == "unowned"),
                    "jiterator": sum(1 for v in scored if v.get("jit")),
                    "jiterator_predicted": sum(1 for v in scored if v.get("jit") and v["verdict"] == "predicted"),
                    "via_library": sum(1 for v in scored if v.get("via_library")),
                    "generic": sum(1 for v in scored if v.get("generic"))}
    by_op: dict[str, list[bool]] = defaultdict(list)
    for v in verdicts:
        if v["verdict"] in ("predicted", "missed"):
            by_op[v["op"]].append(v["verdict"] == "predicted")
    whole = sum(1 for oks in by_op.values() if all(oks))
    out["per_op"] = {"ops": len(by_op), "all_predicted": whole,
                     "percent": round(100.0 * whole / len(by_op), 1) if by_op else None}
    out["skipped"] = dict(skipped)
    return out


def cause(v: dict) -> str:
    """A short failure pattern for grouping."""
    if v["category"] == "library":
        fam = v.get("family")
        libs = v.get("chain_libraries") or []
        if not libs:
            if v.get("chain_op_calls"):
                return f"library {fam}: no library step; chain re-dispatches ({', '.join(v['chain_op_calls'][:3])})"
            if v.get("chain_stub_calls"):
                return f"library {fam}: no library step; chain stops at a stub ({v['chain_stub_calls'][0]})"
            return f"library {fam}: no library step in the chain"
        return f"library {fam}: chain has other libraries ({', '.join(libs)[:60]})"
    miss = v.get("missing")
    fn = v.get("function")
    if miss == "jit":
        return "in-tree: jiterator kernel, no jit step names its function"
    if miss == "definition":
        return "in-tree: index gap (__global__ in the tree's text, not indexed: macro-defined?)"
    if miss == "anchor":
        return f"in-tree: {fn} launch found but functor/lambda ({', '.join(v.get('anchors', []))[:50]}) not reached"
    if v.get("chain_launches"):
        return f"in-tree: {fn} not launched (chain launches other kernels)"
    if v.get("chain_op_calls"):
        return "in-tree: no launches; chain re-dispatches to " + ", ".join(v["chain_op_calls"][:3])
    if v.get("chain_stub_calls"):
        return "in-tree: no launches; chain stops at stub " + v["chain_stub_calls"][0]
    return f"in-tree: no launches in the chain ({v.get('chain_steps')} steps)"


def report(oracle, verdicts, skipped, a, t_open, cold, warm, t_def, n_def) -> None:
    s = summarise(verdicts, skipped)
    c = oracle.get("counts", {})
    fails = [v for v in verdicts if v["verdict"] == "missed"]
    if not a.quiet:
        print(f"failures ({len(fails)}): op | kernel function | what is missing")
        for v in sorted(fails, key=lambda v: (v["category"], v["op"], v.get("function") or "")):
            print(f"  {v['category']:<7} {v['op']:<34} {(v.get('function') or '')[:44]:<44} {v['reason'][:110]}")
        print()
    by_op: dict[str, list] = defaultdict(list)
    for v in fails:
        by_op[v["op"]].append(v)
    print(f"top {a.top} failing ops (of {len(by_op)}), by missed pairs:")
    for op, vs in sorted(by_op.items(), key=lambda kv: (-len(kv[1]), kv[0]))[: a.top]:
        v = vs[0]
        print(f"  {op:<34} {len(vs):>3}  {v['category']:<7} {(v.get('function') or '')[:40]:<40}  {v['reason'][:90]}")
    pat = Counter(cause(v) for v in fails)
    print("\nfailure patterns:")
    for p, n in pat.most_common(25):
        print(f"  {n:>4}  {p}")
    for kind in ("skew", "unowned"):
        vs = [v for v in verdicts if v["verdict"] == kind]
        if vs:
            names = Counter(f"{v['op']}:{v['function']}" if kind == "skew" else v["function"] for v in vs)
            print(f"\n{kind} ({len(vs)}): " + ", ".join(n for n, _ in names.most_common(12))
                  + (" ..." if len(names) > 12 else ""))

    print(f"\noracle: {a.oracle}")
    print(f"  torch {oracle.get('torch')} on {oracle.get('device')}, recorded {oracle.get('recorded')}; "
          f"{c.get('ops')} OpInfos, {c.get('pairs')} pairs ({len(verdicts)} distinct (op, kernel)), "
          f"{c.get('distinct_kernels')} distinct kernels")
    print(f"tree: {a.tree}  (index open {t_open:.1f} s)")
    if cold:
        print(f"chain query: {len(cold)} ops, cold mean {1000 * statistics.mean(cold):.1f} ms, "
              f"warm mean {1000 * statistics.mean(warm):.1f} ms; kernel definition lookups: {n_def} in {t_def:.1f} s")
    fam, fam_ok = Counter(), Counter()
    for v in verdicts:
        if v.get("category") == "library" and v["verdict"] in ("predicted", "missed"):
            fam[v["family"]] += 1
            fam_ok[v["family"]] += v["verdict"] == "predicted"
    if fam:
        print("library by family: " + ", ".join(f"{f} {fam_ok[f]}/{n}" for f, n in fam.most_common()))
    print(f"skipped: {dict(skipped)}")
    print()
    print(f"{'category':<10} | {'pairs':>6} | {'predicted':>9} | {'%':>6} | {'skew':>5} | {'unowned':>7} | {'jiterator':>9}"
          f" | {'via lib':>7}")
    print("-" * 80)
    for cat in ("in-tree", "library"):
        r = s[cat]
        pct = f"{r['percent']:.1f}" if r["percent"] is not None else "-"
        jit = f"{r['jiterator_predicted']}/{r['jiterator']}"
        print(f"{cat:<10} | {r['pairs']:>6} | {r['predicted']:>9} | {pct:>6} | {r['skew']:>5} | {r['unowned']:>7} | "
              f"{jit:>9} | {r['via_library']:>7}")
    po = s["per_op"]
    print(f"per op: {po['all_predicted']} of {po['ops']} ops ({po['percent']} %) have every scored kernel predicted; "
          f"in-tree pairs in the generic loop/reduction kernels: {s['in-tree']['generic']} of {s['in-tree']['pairs']}")
    print("(pairs: scored distinct (op, kernel), jiterator pairs included; jiterator: of those, predicted/scored;\n"
          " via lib: library pairs predicted by a step of a library that runs the kernel's family itself;\n"
          " skew and unowned pairs are apart, neither pass nor fail)")


if __name__ == "__main__":
    sys.exit(main())
