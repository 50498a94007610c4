"""Text masks applied before tree-sitter or beside it: attribute macros and ``#define``s blanked
(Note [Attribute macros], Note [Defines are read as text]), comments, literals and preprocessor
branches blanked for the brace-matching readers. Every mask keeps byte offsets and line numbers."""
from __future__ import annotations

import re


# Note [Attribute macros]
# ATen decorates declarations with export and attribute macros (TORCH_API, C10_HOST_DEVICE,
# C10_LAUNCH_BOUNDS_1(...), GPU_LAMBDA, ...). Unexpanded, tree-sitter reads them as types or
# calls and recovers with ERROR nodes that can swallow whole functions. We overwrite them with
# spaces of the same length before parsing, so byte offsets and line numbers are unchanged.
_ATTR_WORDS = (
    r"TORCH_API|TORCH_CUDA_CPP_API|TORCH_CUDA_CU_API|TORCH_HIP_API|TORCH_XPU_API|TORCH_PYTHON_API|"
    r"C10_API|C10_EXPORT|C10_IMPORT|C10_HIDDEN|CAFFE2_API|TORCH_CUDA_API|AT_CUDA_API|"
    r"C10_HOST_DEVICE|C10_DEVICE|C10_HOST|GPU_LAMBDA|C10_ALWAYS_INLINE|C10_ALWAYS_INLINE_ATTRIBUTE|"
    r"C10_NOINLINE|C10_UNUSED|C10_NODISCARD|C10_LAUNCH_BOUNDS_0|C10_RESTRICT|C10_FORCE_INLINE|"
    r"C10_ALWAYS_INLINE_UNLESS_MOBILE|C10_HOST_CONSTEXPR|C10_HOST_CONSTEXPR_EXCEPT_WIN_CUDA|"
    r"C10_CONSTEXPR_EXCEPT_WIN_CUDA|CPU_CAPABILITY_INLINE|TORCH_NOINLINE|C10_USED|AT_NOINLINE"
)
_ATTR_CALLS = (
    r"C10_LAUNCH_BOUNDS_1|C10_LAUNCH_BOUNDS_2|__launch_bounds__|C10_DEPRECATED_MESSAGE|"
    r"C10_DIAGNOSTIC_PUSH_AND_IGNORED_IF_DEFINED|__attribute__|__declspec|alignas|C10_ALIGNAS"
)
# CUDA keywords the cpp grammar does not know (headers shared by .cpp and .cu use them).
_CUDA_WORDS = r"__global__|__host__|__device__|__forceinline__|__noinline__|__shared__|__constant__|__restrict__|__inline__"
_PAREN = rb"\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)"
_BLANK_CPP = re.compile(
    rb"\b(?:" + (_ATTR_WORDS + "|" + _CUDA_WORDS).encode() + rb")\b|\b(?:" + _ATTR_CALLS.encode() + rb")\s*" + _PAREN
)
_BLANK_CUDA = re.compile(
    rb"\b(?:" + _ATTR_WORDS.encode() + rb")\b|\b(?:" + _ATTR_CALLS.encode() + rb")\s*" + _PAREN
)


def spaces(m: re.Match) -> bytes:
    return re.sub(rb"[^\n]", b" ", m.group(0))


_DEFINE = re.compile(rb"^[ \t]*#[ \t]*(?:define|undef)\b(?:[^\n]*\\\r?\n)*[^\n]*", re.M)


def blank_attributes(src: bytes, lang: str) -> bytes:
    """Replace attribute macros and ``#define``/``#undef`` lines by spaces (same length,
    newlines kept). See Note [Attribute macros] and Note [Defines are read as text]."""
    return _DEFINE.sub(spaces, (_BLANK_CUDA if lang == "cuda" else _BLANK_CPP).sub(spaces, src))


# Note [Defines are read as text]
# tree-sitter-cpp cannot place a `#define` inside a function body (ATen defines launch macros
# such as SMALL_INDEX in the middle of index_select_out_cuda_impl); the rest of the file then
# becomes an ERROR node. Definitions are therefore read by macros.read_defines and blanked out
# before parsing.


CODE_NOISE = re.compile(rb'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)


def mask_code(src: bytes) -> bytes:
    """Preprocessor lines, #else branches, comments and literals blanked (offsets kept)."""
    return CODE_NOISE.sub(spaces, mask_preprocessor(src))


def mask_preprocessor(src: bytes) -> bytes:
    """Blank preprocessor lines (with continuations) and #else/#elif branches, keeping offsets."""
    out = []
    skipping: list[bool] = []
    cont = False
    for line in src.split(b"\n"):
        stripped = line.lstrip()
        directive = cont or stripped.startswith(b"#")
        if stripped.startswith(b"#") and not cont:
            d = stripped[1:].lstrip()
            if d.startswith(b"if"):
                skipping.append(False)
            elif d.startswith((b"else", b"elif")) and skipping:
                skipping[-1] = True
            elif d.startswith(b"endif") and skipping:
                skipping.pop()
        cont = directive and line.rstrip().endswith(b"\\")
        out.append(b" " * len(line) if directive or any(skipping) else line)
    return b"\n".join(out)
