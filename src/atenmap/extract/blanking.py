"""Text masks applied before tree-sitter or beside it: attribute macros and ``#define``s blanked
(Note [Attribute macros], Note [Defines are read as text]), comments, literals and preprocessor
branches blanked for the brace-matching readers. Every mask keeps byte offsets and line numbers."""
from __future__ import annotations

import re
from typing import Iterator

from atenmap.extract.linestart import line_matches
from atenmap.extract.macros import balanced_paren


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


def _blank_regex(words: str, calls: str) -> re.Pattern:
    """``\b(WORD)\b`` or ``\b(CALL)(...)``; the lookahead on the first letters lets the regex
    engine skip most word starts without trying every alternative (3x faster, same matches), and
    the alternatives grouped by first letter spare it the others' (12 % faster, same matches: no
    two of them can match at one place)."""
    firsts = "".join(sorted({w[0] for w in (words + "|" + calls).split("|")}))
    # not a query: attribute macros blanked before the parse (tree-sitter would misread them)
    return re.compile(rb"\b(?=[" + firsts.encode() + rb"])(?:(?:" + _by_first_letter(words) + rb")\b|(?:"
                      + _by_first_letter(calls) + rb")\s*" + _PAREN + rb")")


def _by_first_letter(alternatives: str) -> bytes:
    """``A1|B1|A2`` -> ``A(?:1|2)|B(?:1)`` (the order within each letter kept)."""
    by: dict[str, list[str]] = {}
    for w in alternatives.split("|"):
        by.setdefault(w[0], []).append(w[1:])
    return "|".join(f"{c}(?:{'|'.join(rest)})" for c, rest in sorted(by.items())).encode()


_BLANK_CPP = _blank_regex(_ATTR_WORDS + "|" + _CUDA_WORDS, _ATTR_CALLS)
_BLANK_CUDA = _blank_regex(_ATTR_WORDS, _ATTR_CALLS)


BLANK = bytes.maketrans(bytes(b for b in range(256) if b != 10), b" " * 255)  # every byte but \n -> space


def spaces(m: re.Match) -> bytes:
    """The match with every byte but newlines turned into a space."""
    return m.group(0).translate(BLANK)


# not a query: preprocessor text (#define/#undef lines), blanked before the parse
_DEFINE = re.compile(rb"^[ \t]*#[ \t]*(?:define|undef)\b(?:[^\n]*\\\r?\n)*[^\n]*", re.M)


def blank_attributes(src: bytes, lang: str) -> bytes:
    """Replace attribute macros, ``#define``/``#undef`` lines and the bodies of long numeric tables
    by spaces (same length, newlines kept). See Note [Attribute macros], Note [Defines are read as
    text] and Note [Numeric tables]."""
    text = _blank_defines((_BLANK_CUDA if lang == "cuda" else _BLANK_CPP).sub(spaces, src))
    return _NUMERIC_TABLE.sub(_blank_table, text) if len(text) >= _TABLE_MIN else text


# Note [Jiterator code is a string]
# ``jiterator_stringify(template <typename T> T mul_kernel(T a, T b) { return a * b; })`` is a macro
# that makes its argument a string (Note [Jiterator kernels] in jiterator.py reads it as text). Parsed
# as code, a ``template <...>`` in an argument list is an ERROR node, and inside a function body
# tree-sitter's recovery swallowed the next statement: BinaryMulKernel.cu's
# ``opmath_jitted_gpu_kernel_with_scalars<mul_name, ...>(iter, mul_string);`` had no call fact (3 of
# 2.6.0's 86 jitted call sites). Inside a function body (found by brace matching, textblocks.py) the
# argument is blanked before the parse (its parentheses kept, an empty call to tree-sitter), as
# attribute macros are: the same bytes and lines. The name and its parentheses are found with
# comments and literals masked: ``// jiterator_stringify(`` or a ``")"`` never blanks code. At namespace scope (cuda/Math.cuh's
# ``const auto lgamma_string = jiterator_stringify(...)``) nothing follows inside a function to be
# swallowed, and the string's functions stay indexed as they were.
STRINGIFY = b"jiterator_stringify"
_WORD_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


def blank_jiterator_code(text: bytes, masked: bytes, functions: list[tuple[int, int, int, str]]) -> bytes:
    """Each ``jiterator_stringify(...)`` argument inside one of ``functions`` (``(start, end, ...)``
    byte spans) blanked: Note [Jiterator code is a string]. The name and its parentheses are found in
    ``masked`` (``text`` with comments and literals blanked, mask_code): a name in a comment or a
    string, or a parenthesis in either, never blanks code."""
    at = masked.find(STRINGIFY)
    pieces, done = [], 0
    while at >= 0:
        paren = at + len(STRINGIFY)
        while paren < len(masked) and masked[paren] in b" \t\r\n":
            paren += 1
        inside = any(f[0] <= at < f[1] for f in functions)
        close = balanced_paren(masked, paren) if inside and masked[paren:paren + 1] == b"(" and (
            at == 0 or masked[at - 1] not in _WORD_BYTES) else -1
        if close > paren:
            pieces += (text[done:paren + 1], text[paren + 1:close - 1].translate(BLANK))
            done = close - 1
        at = masked.find(STRINGIFY, max(at + 1, done))
    return b"".join(pieces) + text[done:] if pieces else text


def _blank_defines(text: bytes) -> bytes:
    """``_DEFINE.sub(spaces, text)``, its matches found from their ``#`` (Note [Line-start patterns])."""
    pieces, done = [], 0
    for m in line_matches(_DEFINE, b"#", text):
        pieces += (text[done:m.start()], m.group(0).translate(BLANK))
        done = m.end()
    return b"".join(pieces) + text[done:] if pieces else text


# Note [Numeric tables]
# A few files are mostly one constant table: SobolEngineOpsUtils.cpp is 2.1 MB (10% of
# aten/src/ATen's bytes) of ``const int64_t poly[21201] = {1, 3, ...};`` and
# ``initsobolstate[21201][18] = {{1, 0, ...}, ...};``, a quarter of a second of tree-sitter and a
# tree of a million nodes that no fact comes from (numbers name nothing). The body of an
# initializer (``= {...};``) of at least _TABLE_MIN bytes of nothing but numbers, braces, commas
# and blanks is blanked before the parse (the braces that open and close it kept), as attribute
# macros are: the same bytes and lines, an empty initializer to tree-sitter, no fact changed.
_TABLE_MIN = 4096
# not a query: blanked before the parse (Note [Numeric tables]): no tree exists yet
_NUMERIC_TABLE = re.compile(rb"=[ \t\r\n]*\{([0-9a-fA-FxXuUlL.+\-,{} \t\r\n]{%d,})\}[ \t\r\n]*;" % _TABLE_MIN)


def _blank_table(m: re.Match) -> bytes:
    body = m.group(1)
    return m.group(0)[:m.start(1) - m.start(0)] + body.translate(BLANK) + m.group(0)[m.end(1) - m.start(0):]


# Note [Defines are read as text]
# tree-sitter-cpp cannot place a `#define` inside a function body (ATen defines launch macros
# such as SMALL_INDEX in the middle of index_select_out_cuda_impl); the rest of the file then
# becomes an ERROR node. Definitions are therefore read by macros.read_defines and blanked out
# before parsing.


# not a query: comments kept in text read back as written (a signature's head, a #if line's condition)
COMMENTS = re.compile(rb"//[^\n]*|/\*.*?\*/", re.S)
# not a query: comments and literals masked in text readers of files not parsed or not fitted
CODE_NOISE = re.compile(COMMENTS.pattern + rb'|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)


def replace_comments(text: str, repl: str) -> str:
    """COMMENTS over ``str`` (preproc.py's #if lines): each ``//`` comment (to the end of its line)
    and each closed ``/* */`` comment replaced by ``repl``, read from left to right as the regex
    does (an unclosed ``/*`` is no comment, and a ``//`` after it still is)."""
    out, done, pos = [], 0, text.find("/")
    while 0 <= pos < len(text) - 1:
        if text[pos + 1] == "/":
            end = text.find("\n", pos + 2)
            end = len(text) if end < 0 else end
        else:
            end = text.find("*/", pos + 2) if text[pos + 1] == "*" else -1
            if end < 0:
                pos = text.find("/", pos + 1)
                continue
            end += 2
        out += (text[done:pos], repl)
        done = end
        pos = text.find("/", end)
    return "".join(out) + text[done:] if out else text


def mask_code(src: bytes, balanced_branches: bool = False) -> bytes:
    """Preprocessor lines, #else branches, comments and literals blanked (offsets kept).
    ``balanced_branches``: the #else/#elif branches of a conditional whose every branch balances
    its braces are kept too (Note [Balanced #else branches])."""
    keep = _balanced_conditionals(src) if balanced_branches else frozenset()
    return CODE_NOISE.sub(spaces, mask_preprocessor(src, keep))


# not a query: preprocessor text (# lines)
_HASH_LINE = re.compile(rb"^[ \t\r\x0b\x0c]*#", re.M)  # a line whose first non-blank byte is #
# not a query: the braces of text whose comments, literals and preprocessor lines are blanked
_BRACE = re.compile(rb"[{}]")


def _directives(src: bytes) -> Iterator[tuple[int, int, bytes]]:
    """``(start, end, word)`` of each preprocessor line (with its continuations): ``if`` (also
    ifdef/ifndef), ``else`` (also elif), ``endif`` or ``b""`` for any other directive."""
    i = 0
    for m in line_matches(_HASH_LINE, b"#", src, " \t\r\x0b\x0c"):
        if m.start() < i:
            continue  # a continued line of the directive before
        start = m.start()
        end = src.find(b"\n", start)
        end = len(src) if end < 0 else end
        d = src[m.end():end].lstrip()
        line_start = start
        while end < len(src) and src[line_start:end].rstrip().endswith(b"\\"):  # continued on the next line
            line_start = end + 1
            end = src.find(b"\n", line_start)
            end = len(src) if end < 0 else end
        word = (b"if" if d.startswith(b"if") else b"else" if d.startswith((b"else", b"elif"))
                else b"endif" if d.startswith(b"endif") else b"")
        yield start, end, word
        i = end


def mask_preprocessor(src: bytes, keep: frozenset[int] = frozenset()) -> bytes:
    """Blank preprocessor lines (with continuations) and #else/#elif branches, keeping offsets;
    the branches of the conditionals whose ordinals (0 for the file's first ``#if``) are in
    ``keep`` stay. One pass over the directives, in time linear in the file (a count of the open
    conditionals in an #else branch, not a scan of the stack at each line: 20,000 nested #if stay
    linear)."""
    if b"#" not in src:
        return src
    out = bytearray(src)
    frames: list[bool] = []  # one per open conditional: in its blanked #else/#elif branch
    kept: list[bool] = []  # one per open conditional: its branches all stay
    skipped = 0  # how many frames are True
    i = ordinal = 0
    for start, end, word in _directives(src):
        if skipped:
            out[i:start] = src[i:start].translate(BLANK)
        if word == b"if":
            frames.append(False)
            kept.append(ordinal in keep)
            ordinal += 1
        elif word == b"else" and frames:
            if not frames[-1] and not kept[-1]:
                frames[-1] = True
                skipped += 1
        elif word == b"endif" and frames:
            skipped -= frames.pop()
            kept.pop()
        out[start:end] = src[start:end].translate(BLANK)
        i = end
    if skipped:
        out[i:] = src[i:].translate(BLANK)
    return bytes(out)


# Note [Balanced #else branches]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# The brace matching of broken files (Note [Namespaces of broken files]) reads the first branch of
# each conditional, since the branches of one ``#if`` may split a brace between them (CUDABlas.cpp's
# ``} #ifdef X else if (...) { #else else { #endif``). But ATen's build-configuration files put the
# real code in the ``#else``: cudnn/RNN.cpp is ``#if !AT_CUDNN_ENABLED()`` (error stubs in their own
# ``namespace at { namespace native {``) ``#else`` (2,600 lines of cuDNN code in another ``namespace
# at { namespace native {``) ``#endif``, and tree-sitter loses that second namespace, so only the
# text could give ``_cudnn_rnn``'s ``at::native``. A conditional whose every branch closes each brace
# it opens, and never closes one it did not open (counted in the text with comments, literals and
# preprocessor lines blanked, nested conditionals read whole), splits nothing: its branches are all
# read, each then sees its own namespaces and functions.
def _balanced_conditionals(src: bytes) -> frozenset[int]:
    """The ordinals of the conditionals whose branches each balance their braces (Note [Balanced
    #else branches]): one merge of the file's braces with its directives, linear in the file."""
    if b"#" not in src:
        return frozenset()
    text = CODE_NOISE.sub(spaces, mask_preprocessor(src, _ALL))
    events = sorted([(s, w) for s, _, w in _directives(src) if w] + [(m.start(), m.group(0)) for m in _BRACE.finditer(text)])
    keep: set[int] = set()
    # per open conditional: [ordinal, depth at #if, balanced so far, lowest depth in this branch,
    # depth after the first branch, lowest depth in the first branch]
    stack: list[list] = []
    depth = ordinal = 0
    for _, tok in events:
        if tok == b"{":
            depth += 1
        elif tok == b"}":
            depth -= 1
            if stack:
                stack[-1][3] = min(stack[-1][3], depth)
        elif tok == b"if":
            stack.append([ordinal, depth, True, depth, None, None])
            ordinal += 1
        elif stack:
            f = stack[-1]
            f[2] = f[2] and depth == f[1] and f[3] >= f[1]
            if f[4] is None:
                f[4], f[5] = depth, f[3]
            if tok == b"else":
                depth, f[3] = f[1], f[1]
                continue
            stack.pop()
            if f[2]:
                keep.add(f[0])
            depth = f[4]
            if stack:
                stack[-1][3] = min(stack[-1][3], f[1] if f[2] else f[5])
    return frozenset(keep)


class _Everything(frozenset):
    """A ``keep`` that holds every ordinal: only the directive lines are blanked."""
    def __contains__(self, item: object) -> bool:
        return True


_ALL = _Everything()
