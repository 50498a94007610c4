"""Runtime backend choices: the settings read at run time that pick one vendor path over another.

Note [Runtime backend choices]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Beside ``#if`` (what the build has), ATen picks a vendor path at run time from a few settings, and a
chain shows every path. A branch whose condition reads one of them labels the paths below it with
the setting and its value, so a reader knows what to set to get each:

* ``at::globalContext().linalgPreferredBackend()`` (``torch.backends.cuda.preferred_linalg_library``):
  cuSOLVER or MAGMA in the linalg drivers (cuda/linalg/BatchLinearAlgebra.cpp: ``switch
  (preferred_backend) case at::LinalgBackend::Magma:``; ``bool use_magma = ... == Magma; if
  (use_magma)``), the default being a heuristic on sizes and what was built (``use_magma_``);
* ``at::globalContext().blasPreferredBackend()`` (``torch.backends.cuda.preferred_blas_library``):
  cuBLAS or cuBLASLt in CUDABlas.cpp's ``gemm_internal<T>``;
* ``cudnnv8_enabled_check_debug()``: cuDNN's v8 graph API (cudnn_frontend) or the v7 API
  (``TORCH_CUDNN_V8_API_DISABLED=1``, cudnn/Conv_v8.cpp);
* ``useLtInterface`` / ``disable_addmm_cuda_lt``: addmm's cuBLASLt epilogue (bias, and GELU/ReLU, fused
  into the GEMM: a 1-D bias, beta 1, contiguous result; ``DISABLE_ADDMM_CUDA_LT=1`` turns it off);
* ``IsTunableOpEnabled()``: TunableOp (``PYTORCH_TUNABLEOP_ENABLED=1``) instead of the fixed library call.

A condition that is a variable set from one of them in the same function (``auto
preferred_backend = at::globalContext().linalgPreferredBackend(); switch (preferred_backend)``) counts
as the setting (:func:`aliases`). The value comes from the branch: the ``case`` label, the
enumerator the ``if`` compares with (``== BlasBackend::Cublaslt``; its ``else`` is "not"), or for a
flag yes/no. Only the settings of :data:`CHOICES` are named: a branch on sizes or dtypes is a
branch, shown by ``--why`` as it is written.

Note [A setting left at its default]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A user who sets nothing runs each setting's default, and a path under another value runs only for
whoever sets it: ``svd_kernel``'s ``bool use_magma = ...linalgPreferredBackend() ==
at::LinalgBackend::Magma; if (use_magma) svd_magma(...) else svd_cusolver(...)`` runs cuSOLVER by
default, and ``gemm_internal<T>``'s ``== BlasBackend::Cublaslt`` branch runs cuBLASLt only when it is
asked for. The defaults are Context.h's initial values (2.6.0, Context.h:417-428): the linalg
library ``Default`` (``TORCH_LINALG_PREFER_CUSOLVER=1`` makes it Cusolver), the BLAS library
``Cublas`` on CUDA and ``Cublaslt`` on ROCm (hipBLASLt unless ``TORCH_BLAS_PREFER_HIPBLASLT=0``;
Context.cpp:298-321 turns it back to Cublas on a GPU hipBLASLt does not support, outside gfx90a,
gfx94x and gfx110x: the answer is for the supported ones),
TunableOp off, cuDNN's v8 API. A way whose label names another value of a setting (``Magma``,
``Cublaslt`` on CUDA, TunableOp ``on``; not ``not Magma``, ``default:`` or the default itself) is
ranked after the ways the default settings take (resolve/runs.py), never dropped: the answer is for
whoever asks, and one ``torch.backends.cuda.preferred_linalg_library("magma")`` turns it on. The
values one call site's branches give (an ``else if`` chain's, Note [An else-if chain's earlier
tests] in extract/enclosing.py) all hold there: ``not Cublaslt and not Ck`` (gemm_internal<T>'s last
``else`` on ROCm) is off ROCm's default, ``not Ck`` alone was not; several call sites' values are
joined with "or", any of which may be the default's. The
addmm epilogue is no setting a user leaves alone (the call's bias decides it): it has no default.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from atenmap.model import Location, Reason

__all__ = ["CHOICES", "Choice", "aliases", "label", "mentions", "off_default", "runtime_reasons"]


@dataclass(frozen=True)
class Choice:
    pattern: re.Pattern[str]  # what the condition reads
    setting: str  # what a user sets, in words
    how: str  # where it is set
    flag: tuple[str, str] | None = None  # a yes/no setting: its two values (else an enumeration)
    default: tuple[str, str] | None = None  # (CUDA build, ROCm build): the value a user who sets nothing runs


def _c(pattern: str, setting: str, how: str, flag: tuple[str, str] | None = None,
       default: tuple[str, str] | None = None) -> Choice:
    return Choice(re.compile(pattern), setting, how, flag, default)


CHOICES: tuple[Choice, ...] = (
    _c(r"linalgPreferredBackend\s*\(|\bLinalgBackend::", "linalg library",
       "torch.backends.cuda.preferred_linalg_library", default=("Default", "Default")),
    _c(r"blasPreferredBackend\s*\(|\bBlasBackend::", "BLAS library", "torch.backends.cuda.preferred_blas_library",
       default=("Cublas", "Cublaslt")),
    _c(r"cudnnv8_enabled_check_debug\s*\(", "cuDNN API", "TORCH_CUDNN_V8_API_DISABLED=1 picks v7",
       ("v8 (cudnn_frontend)", "v7"), ("v8 (cudnn_frontend)", "v8 (cudnn_frontend)")),
    _c(r"\buseLtInterface\b", "addmm cuBLASLt epilogue",
       "1-D bias, beta 1, contiguous result; DISABLE_ADDMM_CUDA_LT=1 turns it off", ("yes", "no")),
    _c(r"IsTunableOpEnabled\s*\(", "TunableOp", "PYTORCH_TUNABLEOP_ENABLED=1", ("on", "off"), ("off", "off")),
)

_ASSIGN_ONE = re.compile(r"\b([A-Za-z_]\w*)\s*=(?!=)\s*([^;{}]+)$")
_ENUM = re.compile(r"\b(?:LinalgBackend|BlasBackend)::(\w+)")
_COND = re.compile(r"\((.*)\)")
_PP_LABEL = re.compile(r" \[#if .*\]$")  # conditions.label's


# What every pattern of CHOICES needs in the text: plain substring tests (``in`` on bytes is a fast
# search, a regex alternation over a 70 KB file is not) before any regex runs.
_NEEDLES = ("PreferredBackend", "LinalgBackend::", "BlasBackend::", "cudnnv8_enabled_check_debug", "useLtInterface",
            "IsTunableOpEnabled")
_NEEDLES_B = tuple(n.encode() for n in _NEEDLES)


def mentions(text: bytes) -> bool:
    """Whether a function's text names any setting of :data:`CHOICES` (else none of its branches can)."""
    return any(n in text for n in _NEEDLES_B)


def aliases(text: str) -> dict[str, str]:
    """Variables of a function's text set from a setting of :data:`CHOICES`: name -> expression. Only
    the statements that name a setting are read."""
    out: dict[str, str] = {}
    for needle in _NEEDLES:
        at = text.find(needle)
        while at >= 0:
            start = max(text.rfind(c, 0, at) for c in ";{}") + 1
            end = text.find(";", at)
            got = _ASSIGN_ONE.search(text[start:end if end >= 0 else len(text)])
            if got is not None and any(c.pattern.search(got.group(2)) for c in CHOICES):  # set from a setting
                out[got.group(1)] = got.group(2).strip()
            at = text.find(needle, at + len(needle))
    return out


def _expand(text: str, names: dict[str, str]) -> str:
    if not names:
        return text
    return re.sub(r"\b\w+\b", lambda m: f"({names[m.group(0)]})" if m.group(0) in names else m.group(0), text)


def label(kind: str, text: str, names: dict[str, str] | None = None,
          switch: str = "") -> tuple[str, str] | None:
    """``(setting, value)`` (:data:`CHOICES`' words) when the branch ``kind``/``text`` reads a runtime setting; ``switch``:
    the text of the ``switch`` a ``case`` is in. None otherwise. See Note [Runtime backend choices]."""
    if kind not in ("if", "else", "case", "ternary", "return"):
        return None
    pp = _PP_LABEL.search(text)  # an else whose if holds only under an #if (resolve/runs.py's _this_build)
    if pp is not None:
        got = label(kind, text[:pp.start()], names, switch)
        return (got[0], got[1] + pp.group(0)) if got else None
    subject = _expand(switch if kind == "case" else text, names or {})
    for c in CHOICES:
        if not c.pattern.search(subject) and not (kind == "case" and c.pattern.search(text)):
            continue
        head = c.setting
        if kind == "case":
            value = _ENUM.search(text)
            stacked = " or default" if value and re.search(r"\bdefault\s*:", text) else ""  # runs.py's _stacked
            return head, value.group(1) + stacked if value else "default"
        cond = _COND.search(subject)
        cond = cond.group(1) if cond else subject
        m = c.pattern.search(cond)
        value = _ENUM.search(cond)
        negated = False
        if m is not None:
            negated = cond[:m.start()].rstrip(" (").endswith("!")
            if value is not None:
                negated ^= "!=" in cond[min(m.start(), value.start()):max(m.end(), value.end())]
        if kind in ("else", "return"):
            negated = not negated
        if c.flag is None:
            return head, ("not " if negated else "") + (value.group(1) if value else "?")
        return head, c.flag[negated]
    return None


def runtime_reasons(per_site: list[list[tuple[str, str, int]]], file: str,
                    names: dict[str, str] | None = None) -> list[Reason]:
    """The runtime settings on the way to one step: for the branches (kind, text, line) around each
    of its call sites (innermost first), one ``runtime`` reason per setting, its values over the
    sites joined with "or" (a helper called under ``case Magma:`` and under ``default:``)."""
    found: dict[str, tuple[list[str], int]] = {}
    for branches in per_site:
        switch = ""
        here: dict[str, tuple[list[str], int]] = {}
        for kind, text, line in reversed(branches):  # outermost first: a case's switch comes before it
            if kind == "switch":
                switch = text
                continue
            got = label(kind, text, names, switch)
            if got is None:
                continue
            values, _first = here.setdefault(got[0], ([], line))
            if got[1] not in values:
                values.append(got[1])
        for setting, (values, line) in here.items():
            value = _all_of(values)
            got, _first = found.setdefault(setting, ([], line))
            if value not in got:
                got.append(value)
    how = {c.setting: c.how for c in CHOICES}
    return [Reason("runtime", f"{setting}: {' or '.join(values)} ({how[setting]})", Location(file, line))
            for setting, (values, line) in found.items()]


def _all_of(values: list[str]) -> str:
    """The values one call site's branches give a setting, which all hold there: an ``else if``
    chain's ``not Cublaslt`` and ``not Ck`` as ``not Cublaslt and not Ck``, outermost first; a value
    named (``Ck``) stands for the ``not``s of the other values beside it (Note [An else-if chain's
    earlier tests] in extract/enclosing.py)."""
    named = [v for v in values if not _PP_LABEL.sub("", v).startswith("not ")]
    if named:
        values = named + [v for v in values if v not in named and _PP_LABEL.sub("", v)[4:] in
                          {_PP_LABEL.sub("", n) for n in named}]
    return " and ".join(values)


def _default_value(value: str, default: str) -> bool:
    """Whether a label's value holds for the setting's ``default`` (Note [A setting left at its default]);
    ``a and b`` (:func:`_all_of`): when both hold."""
    if " and " in value:
        return all(_default_value(v, default) for v in value.split(" and "))
    value = _PP_LABEL.sub("", value).strip()
    if value in (default, "default", "?"):
        return True
    return value.startswith("not ") and value[4:] != default


def off_default(reasons, platform: str = "cuda") -> bool:
    """Whether one of the ``runtime`` ``reasons`` (runtime_reasons') holds only for a value of its
    setting that is not the default: the way runs only for whoever sets it (Note [A setting left at
    its default])."""
    for r in reasons:
        if r.kind != "runtime":
            continue
        setting, _, rest = r.text.partition(": ")
        choice = next((c for c in CHOICES if c.setting == setting), None)
        if choice is None or choice.default is None:
            continue
        values = rest[:-len(f" ({choice.how})")] if rest.endswith(f" ({choice.how})") else rest
        default = choice.default[platform == "rocm"]
        if not any(_default_value(v, default) for v in values.split(" or ")):
            return True
    return False
