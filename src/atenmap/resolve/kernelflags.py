"""What a kernel's ``true``/``false`` template arguments say, read from the lines that launch it.

Note [Template flags of a kernel]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A kernel's name often carries flags the code never spells as a word of the name:
``softmax_warp_forward<float, float, float, 3, true, false>`` is the log-softmax kernel because the
launch writes ``softmax_warp_forward<input_t, output_t, acc_t, L2E, is_log_softmax, is_masked>``. So
the launch's template arguments are paired, by position, with the name's: the identifier at a
``true`` says what the kernel does (its words rank an operator like the kernel's own code:
``_log_softmax`` before ``_softmax``), the identifier at a ``false`` what it does not (an operator
holding one of those words, and no word of the kernel's names, ranks last: ``_masked_softmax`` and
``_log_softmax_backward_data`` for ``softmax_warp_backward<..., false, false>``). Of two operators the
name spells alike, the one holding more words of a ``true`` flag comes first: for
``softmax_warp_backward<..., true, false>`` neither backward operator is spelled whole (``data`` is no
word of the name), and ``is_log_softmax`` puts ``_log_softmax_backward_data`` before
``_softmax_backward_data``. Only launch lines
are read (a few per kernel), and only when the name has such a flag.

Note [Template arguments handed down by callers]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A kernel's template argument is often a template parameter of the function that launches it, and each
operator's kernel hands that function a literal: ``triu_tril_kernel<scalar_t, IndexType, upper, ...>``
is launched by ``template <bool upper> void triu_tril_cuda_template(...)``, which ``tril_cuda`` calls as
``triu_tril_cuda_template<false>(...)`` and ``triu_cuda`` as ``<true>``; Dropout.cu's
``launcher<IndexType, mask_t>`` launches ``fused_dropout_kernel_vec<..., mask_t>``, ``dropout_cuda<mask_t>``
calls it with its own ``mask_t``, and ``native_dropout_cuda`` calls ``dropout_cuda<bool>`` where
``fused_dropout_cuda`` calls ``dropout_cuda<uint8_t>``. So the launch's template arguments are paired with
the name's, the launching template's parameters found among them, and its callers read: one that passes
the value the kernel's name shows is named among the ``true`` flags (its words say what the kernel
does), one that passes another among the ``false`` ones (what it does not), and one that passes its own
template parameter on is followed to its callers (three levels at most). The same holds for the
function a lambda of the name is written in (``masked_scale_kernel<bool, c10::BFloat16, float>(...)::
{lambda}``, called as ``masked_scale_kernel<mask_t, scalar_t>`` by ``dropout_backward_cuda<mask_t>``,
which ``native_dropout_backward_cuda`` calls with ``bool`` and ``masked_scale_cuda`` with ``uint8_t``).
Only values both spell alike count (``true``/``false``, numbers, built-in and c10 types:
``literal_arg``), and only the callers the index records (twenty at most per function):
``triu_tril_kernel<float, int, false, 2, false>`` is ``tril``'s, ``fused_dropout_kernel_vec<..., bool>``
``native_dropout``'s.

Note [Template flags of a functor]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A functor class in the name carries flags the same way, and its definition names them:
``_cuda_scatter_gather_internal_kernel<false, OpaqueType<4>, int>`` is an instance of
``template <bool is_scatter_like, typename scalar_t> struct _cuda_scatter_gather_internal_kernel``
(ScatterGatherKernel.cu), which ``gather`` builds with ``false`` and ``scatter``/``scatter_add`` with
``true``. So the functor's template arguments are paired, by position, with the parameters of the
``template <...>`` line just above its definition, and the words of a ``false`` flag say what the kernel
is not even when the functor's own name holds them (the class is named for both uses: ``scatter`` and
``gather``): ``gather`` first for ``<false, ...>``, the scatter operators for ``<true, ...>``.
"""
from __future__ import annotations

import functools
import os
import re

from atenmap.files import read_text
from atenmap.names import split_template_args

__all__ = ["flag_idents", "launch_template_args", "read_launch_lines", "bool_flags", "literal_arg", "template_args_of",
           "template_params"]

_IDENT = re.compile(r"[A-Za-z_]\w*\Z")
_FLAG = {"true": True, "false": False, "1": None, "0": None}


_TYPE_SPELLINGS = {"int64_t": "long", "int32_t": "int", "int16_t": "short", "int8_t": "signed char",
                   "uint8_t": "unsigned char", "uint16_t": "unsigned short", "uint32_t": "unsigned int",
                   "uint64_t": "unsigned long", "unsigned": "unsigned int"}
_LITERAL_TYPES = frozenset({"bool", "float", "double", "long", "int", "short", "char", "signed char",
                            "unsigned char", "unsigned short", "unsigned int", "unsigned long", "Half", "BFloat16"})


def literal_arg(arg: str) -> str:
    """A template argument as a value both a kernel's name and a call in the source spell alike: ``true``
    / ``false``, a number, a built-in or c10 type (``uint8_t`` and ``unsigned char`` alike, ``c10::Half``
    and ``at::Half``); "" for anything else (a parameter's name, a lambda, a class). A comment beside it
    is allowed (``false /* masked_softmax */``). See Note [Template arguments handed down by callers]."""
    bare = re.sub(r"/\*.*?\*/", "", arg).strip()
    bare = re.sub(r"\A(?:c10|at)::", "", bare)
    bare = _TYPE_SPELLINGS.get(bare, bare)
    if bare in ("true", "false") or bare in _LITERAL_TYPES or re.fullmatch(r"-?\d+", bare):
        return bare
    m = re.fullmatch(r"(-?\d+)[uUlL]+", bare)
    return m.group(1) if m else ""


def launch_template_args(text: str, function: str) -> list[str] | None:
    """The explicit template arguments of the first ``function<...>`` followed by a launch or a call
    in ``text`` (a few source lines; macro continuations allowed); None when there is none."""
    for m in re.finditer(r"\b" + re.escape(function) + r"\s*<", text):
        depth, i = 0, m.end() - 1
        while i < len(text):
            c = text[i]
            depth += (c == "<") - (c == ">")
            if depth == 0:
                break
            if c in ";{}":
                i = len(text)
                break
            i += 1
        if i >= len(text):
            continue
        rest = text[i + 1:].lstrip(" \t\\\n")
        if rest.startswith(("<<<", "(")):
            return split_template_args(text[m.end() - 1:i + 1])
    return None


def flag_idents(kernel_args: tuple[str, ...] | list[str], launch_args: list[str]) -> tuple[list[str], list[str]]:
    """(identifiers the launch passes where the name has ``true``, ... where it has ``false``), by
    position; nothing when the two lists differ in length. See Note [Template flags of a kernel]."""
    if len(kernel_args) != len(launch_args):
        return [], []
    yes, no = [], []
    for value, ident in zip(kernel_args, launch_args):
        flag = _FLAG.get(value.strip())
        if flag is None or not _IDENT.match(ident.strip()):
            continue
        (yes if flag else no).append(ident.strip())
    return yes, no


def read_launch_lines(root: str, file: str, line: int, before: int = 3, after: int = 2) -> str:
    """Lines ``line - before`` .. ``line + after`` of ``file`` under ``root`` ("" when it cannot be
    read): a launch's ``<<<`` may sit on the line before or after its template arguments."""
    path = f"{root.rstrip('/')}/{file}"
    try:
        st = os.stat(path)
        lines = _lines(path, st.st_mtime_ns, st.st_size)
    except OSError:
        return ""
    return "\n".join(lines[max(0, line - 1 - before):line + after])


@functools.lru_cache(maxsize=64)
def _lines(path: str, _mtime_ns: int, _size: int) -> tuple[str, ...]:
    """A source file's lines, read once per version of the file (its mtime and size are the key): a
    kernel's launch lines, its template's callers and its functors' definitions sit in a few files."""
    return tuple(read_text(path, errors="replace").splitlines())


def template_params(text: str) -> list[str] | None:
    """The parameter names of the last ``template <...>`` header in ``text`` (the lines just above a
    definition): ``template <bool is_scatter_like, typename scalar_t>`` -> [is_scatter_like, scalar_t];
    None when there is none. See Note [Template flags of a functor]."""
    heads = list(re.finditer(r"\btemplate\s*<", text))  # not the word inside a name (triu_tril_cuda_template)
    if not heads:
        return None
    start = heads[-1].end() - 1
    depth = 0
    for i in range(start, len(text)):
        depth += (text[i] == "<") - (text[i] == ">")
        if depth == 0:
            names = []
            for p in split_template_args(text[start:i + 1]):
                m = re.search(r"\b(?:bool|typename|class|int|int64_t|size_t|unsigned|[A-Za-z_]\w*)\s+([A-Za-z_]\w*)\s*\Z",
                              p.split("=")[0].strip())
                names.append(m.group(1) if m else "")
            return names
    return None


def bool_flags(args: list[str], params: list[str]) -> tuple[list[str], list[str]]:
    """(parameters given ``true``, given ``false``), paired by position as far as both lists go:
    a release that adds a template parameter after them (2.11's index type) keeps the flags' places.
    See Note [Template flags of a functor]."""
    yes: list[str] = []
    no: list[str] = []
    for value, name in zip(args, params):
        if name and value.strip() in ("true", "false"):
            (yes if value.strip() == "true" else no).append(name)
    return yes, no


def template_args_of(demangled: str, short: str) -> list[str] | None:
    """The template arguments of the first ``short<...>`` in a kernel name (``_cuda_scatter_gather_internal_kernel``
    -> [false, at::native::OpaqueType<4>, int]); None when the name gives none."""
    m = re.search(r"(?:\A|[^\w])" + re.escape(short) + r"<", demangled)
    if not m:
        return None
    start, depth = m.end() - 1, 0
    for i in range(start, len(demangled)):
        depth += (demangled[i] == "<") - (demangled[i] == ">")
        if depth == 0:
            return split_template_args(demangled[start:i + 1])
    return None
