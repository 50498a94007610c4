"""Preprocessor conditions on facts (the ``cond`` column): which builds a line belongs to.

Note [ROCm code under the CUDA key]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
ROCm builds compile ATen's .cu files with HIP and register them under the CUDA key, so CUDA code
carries ROCm branches: ``#ifdef USE_ROCM`` / ``#if defined(USE_ROCM)`` / ``__HIP_PLATFORM_AMD__`` (and
1.13.1 CUDABlas.cpp's ``#elif defined(ROCM_VERSION)``, a macro only ROCm builds define) around launches, helper definitions and whole includes (1.13.1's Loops.cuh includes ROCmLoops.cuh
or CUDALoops.cuh). A chain for the CUDA key drops what only a ROCm build compiles; every other
condition (``AT_MKL_ENABLED()``, ``BUILD_LAZY_CUDA_LINALG``, ``CUDA_VERSION >= 12000``) is shown
with the step, since which side a given build takes is not known here.
"""
from __future__ import annotations

import re

from atenmap.resolve import rocmbuild

_ROCM = re.compile(r"^(defined\s*\(?\s*(USE_ROCM|__HIP_PLATFORM_AMD__|__HIP_PLATFORM_HCC__|USE_ROCM_KERNEL_ASSERT"
                   r"|ROCM_VERSION)\s*\)?"
                   r"|(USE_ROCM|__HIP_PLATFORM_AMD__|__HIP_PLATFORM_HCC__))$")


def _parts(cond: str) -> list[str]:
    return [p.strip() for p in cond.split(" && ") if p.strip()]


def _sign(term: str) -> tuple[bool, str]:
    """(negated, inner) of one term, double negations cancelled: the ``#else`` of
    ``#if !defined(USE_ROCM)`` is ``!(!defined(USE_ROCM))``, a positive USE_ROCM term."""
    neg, t = False, term.strip()
    while True:
        if t.startswith("!"):
            neg, t = not neg, t[1:].strip()
        elif _wrapped(t):
            t = t[1:-1].strip()
        else:
            return neg, t


def _wrapped(t: str) -> bool:
    """Whether ``t`` is one parenthesised group: ``(a)`` but not ``(a) || (b)``."""
    depth = 0
    for i, ch in enumerate(t):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth == 0:
            return i == len(t) - 1 and i > 0
    return False


# Note [The ROCm side of #if]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# ``--platform rocm`` (a ROCm build, which registers its hipified CUDA code under the CUDA key) takes
# the other side: what only a non-ROCm build compiles is dropped (``#if !defined(USE_ROCM)``, the
# ``#else`` of ``#ifdef USE_ROCM``, and ``#if !AT_ROCM_ENABLED()``, which guards the error stubs of
# native/miopen/*.cpp), the USE_ROCM branches are kept. AT_ROCM_ENABLED() counts as a ROCm term only
# here: the CUDA platform's answers keep showing both of its sides, as before.
PLATFORMS = ("cuda", "rocm")
DEFAULT_PLATFORM = "cuda"
_ROCM_ENABLED = re.compile(r"^AT_ROCM_ENABLED\s*\(\s*\)$")


def cuda_only(cond: str) -> bool:
    """True when ``cond`` holds only in a build without ROCm (a negated USE_ROCM / HIP /
    AT_ROCM_ENABLED() term): the code a ROCm build does not compile (Note [The ROCm side of #if])."""
    for p in _parts(cond):
        neg, inner = _sign(p)
        if neg and (_ROCM.match(inner.strip("() ")) or _ROCM_ENABLED.match(inner.strip())):
            return True
    return False


def excluded(cond: str, platform: str = DEFAULT_PLATFORM) -> bool:
    """Whether a build for ``platform`` leaves out the code under ``cond``: ROCm-only code on CUDA
    (Note [ROCm code under the CUDA key]), non-ROCm code on ROCm (Note [The ROCm side of #if]) and
    what a ROCm build configures off (``AT_CUDNN_ENABLED()``, Note [What a ROCm build leaves out] in
    rocmbuild.py)."""
    if platform == "rocm":
        return cuda_only(cond) or any(not neg and rocmbuild.leaves_out(inner)
                                      for neg, inner in map(_sign, _parts(cond)))
    return rocm_only(cond)


def rocm_only(cond: str) -> bool:
    """True when ``cond`` holds only in a ROCm build (a positive USE_ROCM / HIP term)."""
    for p in _parts(cond):
        neg, inner = _sign(p)
        if _ROCM.match(inner.strip("() ")) and not neg:
            return True
    return False


# Note [The machine a platform's build is for]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A platform names a build of PyTorch for a machine with that GPU, and the common such build is
# Linux on x86-64: the wheels ``pip install torch`` takes. Code only another operating system or
# processor compiles (``#if defined(__aarch64__) && AT_MKLDNN_ACL_ENABLED()``: mm's Arm Compute
# Library path on the CPU key; ``#if AT_BUILD_WITH_BLAS() && C10_IOS``: CPUBlas's cblas calls for iOS;
# ``_WIN32``, ``__APPLE__``, ``C10_MOBILE``, ``__powerpc__``/``__VSX__``, ``__s390x__``, Arm's NEON
# and SVE) is kept in the chain, since such builds exist, but it is no run of the common build: the
# runs block ranks it with the edge cases (Note [Edge cases last] in runs.py). The MPS key's build is
# macOS on Apple silicon, whose macros (``__APPLE__``, ``__aarch64__``) are its own.
_MACHINE_MACROS = (r"__aarch64__|__arm__|__arm64__|_M_ARM64|__ARM_NEON(?:__)?|__ARM_FEATURE_\w+|C10_IOS|C10_MOBILE"
                   r"|TARGET_OS_IPHONE|__APPLE__|__MACH__|_WIN32|_WIN64|_MSC_VER|__ANDROID__|__powerpc\w*|__ppc64\w*"
                   r"|__VSX__|__s390x__|__riscv\w*|__EMSCRIPTEN__")
_OTHER_MACHINE = re.compile(r"^(?:defined\s*\(\s*(?:%s)\s*\)|defined\s+(?:%s)|(?:%s))$" % ((_MACHINE_MACROS,) * 3))


def _top_level(cond: str, op: str) -> list[str] | None:
    """``cond`` split at its top-level ``op`` (``&&``/``||``); None where its brackets do not balance."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(cond):
        ch = cond[i]
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth < 0:
            return None
        if depth == 0 and cond.startswith(op, i):
            parts.append(cond[start:i].strip())
            start = i = i + len(op)
            continue
        i += 1
    return None if depth else parts + [cond[start:].strip()]


# An MPS build is macOS on Apple silicon: these are its own machine's macros
_APPLE_SILICON = re.compile(r"__APPLE__|__MACH__|__aarch64__|__arm64__|__ARM_NEON(?:__)?|__ARM_FEATURE_\w+")


def other_machine(cond: str, key: str | None = None) -> bool:
    """Whether ``cond`` holds only in a build for another operating system or processor than
    Linux on x86-64: one of its top-level ``&&`` terms is a positive ``__aarch64__``, ``C10_IOS``,
    ``_WIN32``... (Note [The machine a platform's build is for]). A condition with a top-level
    ``||``, or cut short (``…``), says nothing. Under the MPS ``key``, macOS on Apple silicon is the
    build's own machine."""
    alternatives = _top_level(cond, "||")
    if "…" in cond or alternatives is None or len(alternatives) != 1:
        return False
    parts = _top_level(cond, "&&") or []
    return any(not neg and _OTHER_MACHINE.match(inner)
               and not (key == "MPS" and _APPLE_SILICON.search(inner)) for neg, inner in map(_sign, parts))


# Note [Build-configuration macros]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# ATen's backend folders define each operator twice: ``native/cudnn/RNN.cpp`` is ``#if
# !AT_CUDNN_ENABLED()`` (``_cudnn_rnn`` & co. as stubs that raise "ATen not compiled with cuDNN
# support") ``#else`` (the cuDNN code) ``#endif``; cudnn/BatchNorm.cpp, GridSampler.cpp,
# AffineGridGenerator.cpp and ConvPlaceholders.cpp/ConvShared.cpp, miopen/*.cpp with
# ``AT_ROCM_ENABLED()`` and mkldnn/*.cpp with ``AT_MKLDNN_ENABLED()`` have the same shape. These
# macros are set by CMake from the build's configuration (``set_bool(AT_CUDNN_ENABLED
# CAFFE2_USE_CUDNN)`` &c. in aten/src/ATen/CMakeLists.txt, written to ATen/Config.h), so one build
# compiles one side. The builds a platform describes are PyTorch's release builds: a CUDA build has
# cuDNN and oneDNN (MKLDNN) and no ROCm; a ROCm build has ROCm (MIOpen) and oneDNN and no cuDNN (Note
# [What a ROCm build leaves out] in rocmbuild.py). So where a name has definitions on both sides,
# the one this platform compiles is the pick; a definition on the other side is shown only where it
# is the only one. The macros stay in the steps' ``[#if …]`` labels and the runs' ``when``: they
# are true conditions of the code (a source build may turn cuDNN off), only the pick is decided.
_CONFIGURED = {"AT_CUDNN_ENABLED": {"cuda": True, "rocm": False},
               "AT_ROCM_ENABLED": {"cuda": False, "rocm": True},
               "AT_MKLDNN_ENABLED": {"cuda": True, "rocm": True}}
_CONFIG_MACRO = re.compile(r"^(AT_[A-Z]+_ENABLED)\s*\(\s*\)$")


def configured_off(cond: str, platform: str = DEFAULT_PLATFORM) -> bool:
    """Whether a term of ``cond`` (a conjunction) is a build-configuration macro this platform's
    build sets the other way: ``!AT_CUDNN_ENABLED()`` on CUDA, ``AT_CUDNN_ENABLED()`` on ROCm
    (Note [Build-configuration macros])."""
    for neg, inner in map(_sign, _parts(cond)):
        m = _CONFIG_MACRO.match(inner)
        if m and m.group(1) in _CONFIGURED and _CONFIGURED[m.group(1)][platform] == neg:
            return True
    return False


# BatchLinearAlgebraLib.h defines USE_LINALG_SOLVER where cuSOLVER (CUDART_VERSION and
# CUSOLVER_VERSION) or hipSOLVER (USE_ROCM) is there: in every release build of both platforms.
_DEFINED = {"USE_LINALG_SOLVER": {"cuda": True, "rocm": True}}
_DEFINED_TERM = re.compile(r"^defined\s*\(?\s*(\w+)\s*\)?$")


def not_built(cond: str, platform: str = DEFAULT_PLATFORM) -> bool:
    """Whether this platform's release build leaves out the code under ``cond``: ``excluded``,
    ``configured_off``, or a negated macro its headers always define (``!defined(USE_LINALG_SOLVER)``)."""
    if excluded(cond, platform) or configured_off(cond, platform):
        return True
    for neg, inner in map(_sign, _parts(cond)):
        m = _DEFINED_TERM.match(inner.strip())
        if m and m.group(1) in _DEFINED and _DEFINED[m.group(1)][platform] == neg:
            return True
    return False


def configured_first(rows: list, platform: str = DEFAULT_PLATFORM) -> list:
    """``rows`` (facts with a ``cond``) without the definitions this platform's build does not
    compile, unless none would be left (Note [Build-configuration macros])."""
    kept = [r for r in rows if not configured_off(r.cond, platform)]
    return kept or rows


_DOUBLE_NOT = re.compile(r"!\(!([\w()]+?(?:\(\))?)\)")


def label(cond: str, limit: int = 80) -> str:
    """`` [#if COND]`` for a step's detail, or '' when unconditional."""
    if not cond:
        return ""
    cond = _DOUBLE_NOT.sub(r"\1", cond)  # the #else of `#if !AT_MAGMA_ENABLED()`
    text = cond if len(cond) <= limit else cond[: limit - 1] + "…"
    return f" [#if {text}]"


def from_label(detail: str) -> str:
    """The condition ``label`` wrote into a step's detail ('' when none; possibly cut with ``…``)."""
    m = re.search(r" \[#if (.*)\]", detail)
    return m.group(1) if m else ""


__all__ = ["DEFAULT_PLATFORM", "PLATFORMS", "configured_first", "configured_off", "cuda_only", "excluded", "rocm_only", "label", "from_label"]
