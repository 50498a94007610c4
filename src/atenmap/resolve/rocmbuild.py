"""What a ROCm build of ATen has and leaves out besides the ``USE_ROCM`` side of ``#if``
(``--platform rocm``; Note [The ROCm side of #if] in conditions.py).

Note [What a ROCm build leaves out]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A ROCm build is configured with ``USE_ROCM`` and without ``USE_CUDA``, and CMake's ``USE_CUDNN``
depends on ``USE_CUDA`` (``cmake_dependent_option(USE_CUDNN ... "USE_CUDA" OFF)``). So:

* ``AT_CUDNN_ENABLED()`` is 0 (``set_bool(AT_CUDNN_ENABLED CAFFE2_USE_CUDNN)`` in
  aten/src/ATen/CMakeLists.txt): what ``#if AT_CUDNN_ENABLED()`` guards is not compiled. The
  ``native/cudnn/*.cpp`` files are still built (hipified into ``native/cudnn/hip/``), but their bodies
  sit under that ``#if``; what a call of ``cudnn_convolution`` reaches is the ``#if
  !AT_CUDNN_ENABLED()`` placeholder that raises (``native/cudnn/ConvPlaceholders.cpp``).
* ``aten/src/ATen/cudnn/`` (cuDNN's handle, descriptors and types) is not built at all: CMake appends
  ``cudnn_cpp`` only ``if(CAFFE2_USE_CUDNN)``, and its headers are included by cuDNN code only.
* At run time, ``CUDAHooks::compiledWithCuDNN()`` returns ``AT_CUDNN_ENABLED()`` (false) and
  ``compiledWithMIOpen()`` returns ``AT_ROCM_ENABLED()`` (true). ATen's backend-selection predicates
  that name cuDNN all require the first: ``ConvParams::use_cudnn`` (Convolution.cpp) returns false
  without it, ``use_cudnn_depthwise`` asks ``use_cudnn`` and the cuDNN hooks,
  ``cudnn_is_acceptable`` (TensorProperties.cpp, RNN.cpp's choice), ``_use_cudnn_ctc_loss`` and
  ``_use_cudnn_rnn_flatten_weight`` return false, ``cudnn_conv_use_channels_last`` (ConvUtils.h)
  too, and ``_select_batch_norm_backend`` tests ``compiledWithCuDNN()`` itself. So on ROCm a
  branch whose condition is a conjunction with such a call (not negated) is never taken: a
  predicate is recognised by its name (a call whose name has the word ``cudnn``/``CuDNN``, as every
  one of them has), not by reading its body.
* A selector that returns a backend enumerator (``ConvBackend``, ``BatchNormBackend``) returns the
  MIOpen one where a CUDA build returns the cuDNN one: each ``if (use_cudnn) return X::Cudnn…;
  else if (use_miopen) return X::Miopen…;`` pair. So the place a CUDA build gives ``Cudnn`` (its
  first mention, Note [Backends a selector returns] in runs.py) goes to ``Miopen`` on ROCm, and
  ``CudnnTranspose``'s to ``MiopenTranspose``, where the selector returns those names; an
  enumerator the selector only returns under a cuDNN condition is not returned at all.

``cudnn_enabled`` / ``userEnabledCuDNN()`` (``torch.backends.cudnn.enabled``) is a setting, not a
build fact: on ROCm it gates MIOpen too, and stays undecided.

The CUDA attention kernels are not built either (aten/src/ATen/CMakeLists.txt): the sources of
``native/transformers/cuda/flash_attn/`` (FlashAttention-2 for sm80+) and
``native/transformers/cuda/mem_eff_attention/`` (CUTLASS) are appended only to the ``if(USE_CUDA)``
lists (``native_transformers_cuda_cpp`` / ``_cu``); a ROCm build compiles ``native/transformers/hip/``
instead, whose ``flash_attn/flash_api.hip`` defines ``pytorch_flash::mha_fwd`` & co. with AOTriton
calls, and attention.cu's ``#ifdef USE_ROCM`` branches call AOTriton themselves (Note [Library names
a using-declaration brings in] in chain.py, Note [Functions a ROCm build defines in .hip files] in
hipsource.py).
"""
from __future__ import annotations

import re

__all__ = ["CUDNN_ONLY_DIRS", "built", "counterpart", "leaves_out", "never_taken"]

# The preprocessor terms a ROCm build has false (besides the negated USE_ROCM ones of conditions.py).
_OFF = re.compile(r"^AT_CUDNN_ENABLED\s*\(\s*\)$")
# Source folders a ROCm build does not compile: cuDNN's support library, the CUDA attention kernels.
CUDNN_ONLY_DIRS = ("aten/src/ATen/cudnn/", "aten/src/ATen/native/transformers/cuda/flash_attn/",
                   "aten/src/ATen/native/transformers/cuda/mem_eff_attention/")
# A call whose name has the word cudnn (use_cudnn, cudnn_is_acceptable, compiledWithCuDNN, versionCuDNN).
_NAME_BEFORE = re.compile(r"(\w+)\s*(?:<[^<>()]*>)?\s*$")
_CUDNN_WORD = re.compile(r"(?:^|_)cudnn(?:_|$)|CuDNN")


def leaves_out(term: str) -> bool:
    """Whether one positive ``#if`` term is false in a ROCm build (``AT_CUDNN_ENABLED()``)."""
    return bool(_OFF.match(term.strip()))


def built(path: str) -> bool:
    """Whether a ROCm build compiles code of ``path`` (not ATen/cudnn/, cuDNN's support library, nor
    the CUDA attention kernels' folders)."""
    return not any(f"/{d}" in f"/{path}" for d in CUDNN_ONLY_DIRS)


def _top_level(cond: str, sep: str) -> list[str]:
    """``cond`` split at ``sep`` (``&&`` or ``||``) outside parentheses."""
    out, depth, start, i = [], 0, 0, 0
    while i < len(cond):
        ch = cond[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif depth == 0 and cond.startswith(sep, i):
            out.append(cond[start:i])
            start = i + len(sep)
            i += len(sep)
            continue
        i += 1
    out.append(cond[start:])
    return [p.strip() for p in out]


def _inner(cond: str) -> str:
    """The condition of ``if (COND)`` / ``else if (COND)`` / a bare expression, outer parentheses off."""
    text = cond.strip()
    m = re.match(r"^(?:}\s*)?(?:else\s+)?if\s*(?:constexpr\s*)?\((.*)\)\s*\{?$", text, re.S)
    if m:
        text = m.group(1).strip()
    while text.startswith("(") and text.endswith(")") and _balanced(text[1:-1]):
        text = text[1:-1].strip()
    return text


def _balanced(text: str) -> bool:
    depth = 0
    for ch in text:
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth < 0:
            return False
    return depth == 0


def never_taken(cond: str) -> bool:
    """Whether a ROCm build never takes a branch on ``cond`` (an ``if`` condition, or the text of
    one): one of its ``&&`` terms is a cuDNN predicate's call, not negated (Note [What a ROCm build
    leaves out]). A ``||`` at the top keeps it open unless every side is never taken."""
    text = _inner(cond)
    sides = _top_level(text, "||")
    if len(sides) > 1:
        return all(never_taken(s) for s in sides)
    for term in _top_level(text, "&&"):
        term = _inner(term)
        if len(_top_level(term, "||")) > 1:
            if never_taken(term):
                return True
            continue
        if _cudnn_call(term):
            return True
    return False


def _cudnn_call(term: str) -> bool:
    """Whether ``term`` is, as a whole, a call of a function whose name has the word cudnn (the
    last call of a chain: ``detail::getCUDAHooks().compiledWithCuDNN()``), not negated."""
    if term.startswith("!") or not term.endswith(")"):
        return False
    depth = 0
    for i in range(len(term) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(term[i], 0)
        if depth == 0:
            break
    else:
        return False
    m = _NAME_BEFORE.search(term[:i])
    if m is None or not _CUDNN_WORD.search(m.group(1)):
        return False
    receiver = term[:m.start(1)].rstrip()
    return receiver == "" or receiver.endswith((".", "->", "::"))


def counterpart(enumerator: str) -> str:
    """The enumerator a ROCm build's selector returns where a CUDA build's returns ``enumerator``:
    ``Cudnn`` -> ``Miopen``, ``CudnnTranspose`` -> ``MiopenTranspose``; others unchanged."""
    return re.sub(r"^Cudnn", "Miopen", enumerator) if enumerator.startswith("Cudnn") else enumerator
