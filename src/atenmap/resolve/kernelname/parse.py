"""parse_kernel_name: one kernel name as a profiler prints it -> :class:`KernelName`.

Note [Names as tools print them]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
The same kernel reaches us in several spellings, and all of them parse to the same record:
  * the GNU demangler (torch.profiler, Nsight Systems, c++filt):
    ``void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul> >(int, ...)``
  * Nsight Compute: values with their types, ``>>`` closers, ``<unnamed>`` for anonymous namespaces and
    ``T1``-style placeholders: ``...<(int)4, at::native::<unnamed>::offset_t, ...>(int, T2, T3)``
  * nvprof: ``gemv2N_kernel_val<float, float, float, int=128, ...>``
  * cut short: torch.profiler tables cut names at ``max_name_column_width`` (55 by default) and append
    ``...``; nsys cuts with ``…``; users abbreviate with ``<...>`` and ``(...)``. Such a record has
    ``truncated=True`` and describes the visible part (``function`` may be a prefix of the real name).
  * mangled (``_ZN2at6native...``) when the tool did not demangle.
  * with decorations: whole table rows (numbers before/after the name) and Nsight Compute's launch
    suffix ``(1024, 1, 1)x(256, 1, 1), Context 1, Stream 7`` are dropped, with a note.
``template_args`` keep the text as printed (``(int)4`` stays ``(int)4``); ``<unnamed>`` becomes
``(anonymous namespace)`` everywhere so that ``qualname`` is the same whichever tool printed it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from atenmap.errors import AtenmapError
from atenmap.names import ANONYMOUS, UNCLOSED, split_at_commas
from atenmap.resolve.kernelname.classify import classify_library, kernel_detail, non_kernel
from atenmap.resolve.kernelname.demangling import demangle, is_mangled, partial_demangle
from atenmap.resolve.kernelname.reader import Reader
from atenmap.resolve.kernelname.records import MAX_NAME_CHARS, MAX_NESTING, KernelName, LambdaRef
from atenmap.resolve.libraries import KernelFacts

__all__ = ["parse_kernel_name"]

# Nsight Compute's launch suffix: "(1024, 1, 1)x(256, 1, 1), Context 1, Stream 7, Device 0, CC 9.0"
_NCU_SUFFIX_RE = re.compile(r" \(\d+, \d+, \d+\)x\(\d+, \d+, \d+\)(?:, Context \d+.*)?\Z")
_NCU_OLD_SUFFIX_RE = re.compile(r"(?:, \d{4}-[A-Za-z]{3}-\d{2} [\d:]+)?, Context \d+, Stream \d+.*\Z")
_CLONE_RE = re.compile(r" \[clone [^\]]*\]")
# Table rows: numeric columns before (nsys stats) or after (torch.profiler) the name.
_LEADING_COLUMNS_RE = re.compile(r"\A(?:[-+]?[\d.,]+(?:%|[mnuµ]?s)?\s+)+(?=[^\d\s])")
# (?<=\S): a run of spaces is tried from its first space only, so the search stays linear.
_TRAILING_COLUMNS_RE = re.compile(r"(?<=\S)\s{2,}[-+]?\d[\d.,]*(?:%|[mnuµ]?s|[KMG]i?B|b)?(?:\s|\Z)")
_ELLIPSES = ("...", "…")


def _clean(text: str, notes: list[str]) -> str:
    """Drop table columns and tool decorations; collapse whitespace. See Note [Names as tools print them]."""
    t = text.strip()
    if "  " in t or "\t" in t or t[:1].isdigit():
        m = _LEADING_COLUMNS_RE.match(t)
        if m:
            t = t[m.end() :]
            notes.append("ignored the table columns before the name")
        m = _TRAILING_COLUMNS_RE.search(t)
        if m and m.start() > 0:
            t = t[: m.start()]
            notes.append("ignored the table columns after the name")
    t = " ".join(t.split())
    m = _NCU_SUFFIX_RE.search(t) or _NCU_OLD_SUFFIX_RE.search(t)
    if m and m.start() > 0:
        t = t[: m.start()]
        notes.append("ignored Nsight Compute's launch suffix")
    if "[clone " in t:
        t = _CLONE_RE.sub("", t)
    return t


def parse_kernel_name(text: str) -> KernelName:
    """Parse one kernel name as a profiler prints it. Never raises, except for an empty name.

    >>> k = parse_kernel_name("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)")
    >>> k.kind, k.qualname, k.functors
    ('kernel', 'at::native::vectorized_elementwise_kernel', ('at::native::CUDAFunctor_add',))
    """
    if not text or not text.strip():
        raise AtenmapError("empty kernel name: paste the name as the profiler prints it, e.g. 'void at::native::...<...>(...)'")
    notes: list[str] = []
    name, truncated, partial = _read_text(text, notes)
    other = non_kernel(name)
    if other is not None:
        kind, detail = other
        return KernelName(text, name, kind, "", "", (), (), (), (), None, detail, truncated, tuple(notes))
    parse_text, truncated = _visible_part(name, truncated, notes)
    s = _structure(parse_text, partial, truncated, notes)
    kind, library, detail = _classify(s, parse_text, partial)
    return KernelName(
        raw=text,
        demangled=name,
        kind=kind,
        function=s.function,
        qualname=s.qualname,
        namespaces=s.namespaces,
        template_args=s.template_args,
        functors=s.functors,
        lambdas=s.lambdas,
        library=library,
        detail=detail,
        truncated=s.truncated,
        notes=tuple(notes),
        params=s.params,
    )


def _read_text(text: str, notes: list[str]) -> tuple[str, bool, str | None]:
    """(the name cleaned and demangled, whether it was cut, the qualified name read from a mangling
    that could not be demangled or None)."""
    truncated = False
    body = text.strip()
    if len(body) > MAX_NAME_CHARS:
        notes.append(f"the name is {len(body)} characters long; only the first {MAX_NAME_CHARS} were read")
        body = body[:MAX_NAME_CHARS]
        truncated = True
    name = _clean(body, notes)
    if not name:
        name = " ".join(body.split())
    partial: str | None = None
    if is_mangled(name):
        demangled = demangle(name)
        if demangled == name:
            partial = partial_demangle(name)
            notes.append("could not demangle the name" + (f"; read {partial} from the mangling" if partial else ""))
        name = " ".join(demangled.split())
    return name, truncated, partial


def _visible_part(name: str, truncated: bool, notes: list[str]) -> tuple[str, bool]:
    """The text to parse (``<unnamed>`` spelled as the demangler does, a trailing cut mark removed), and
    whether the tool cut or abbreviated the name."""
    parse_text = name.replace("<unnamed>::", ANONYMOUS + "::")
    if any(e in parse_text for e in _ELLIPSES):
        truncated = True
        notes.append(
            "the name was cut or abbreviated ('...'); torch.profiler tables cut names at "
            "max_name_column_width (55 by default): the fields describe the visible part"
        )
    if parse_text.endswith((".", "…")):  # no kernel name ends so: nsys cuts with "." or "…", tables with "..."
        if not truncated:
            notes.append("the name ends with '.': it was cut short")
        truncated = True
        parse_text = parse_text.rstrip(".…").rstrip() or parse_text
    return parse_text, truncated


@dataclass(frozen=True)
class _Structure:
    function: str
    qualname: str
    namespaces: tuple[str, ...]
    template_args: tuple[str, ...]
    functors: tuple[str, ...]
    lambdas: tuple[LambdaRef, ...]
    truncated: bool
    plain: bool  # the main name is an ordinary function (not a lambda or unnamed type), read without doubt
    params: int | None = None  # the main function's parameters, counted at depth 0 (None: no list shown)


def _structure(parse_text: str, partial: str | None, truncated: bool, notes: list[str]) -> _Structure:
    reader = Reader(parse_text)
    if UNCLOSED in reader.match and not truncated:
        truncated = True
        notes.append("brackets are not closed: the name was cut short")
    if truncated:
        reader.cut_at = len(parse_text)
    names = reader.names(0, len(parse_text), top=True)
    with_params = [n for n in names if n.comps[-1].params is not None]
    main = with_params[-1] if with_params else (names[-1] if names else None)
    ambiguous = not with_params and len(names) > 1

    function, namespaces, template_args = "", (), ()
    params: int | None = None
    if partial is not None:
        *quals, function = partial.split("::")
        namespaces = tuple(quals)
    elif main is not None:
        last = main.comps[-1]
        function = last.head
        namespaces = tuple(c.head for c in main.comps[:-1])
        if last.targs is not None:
            template_args = tuple(split_at_commas(parse_text, reader.match, *last.targs))
        if last.params is not None and not truncated:
            shown = [a for a in split_at_commas(parse_text, reader.match, *last.params) if a]
            params = 0 if shown in ([], ["void"]) else len(shown)
        reader.visit(main, 0, collect=True, is_kernel=True)
    if reader.too_deep:
        notes.append(f"template arguments nested deeper than {MAX_NESTING} levels were not read")
    qualname = "::".join((*namespaces, function)) if function else ""
    plain = not ambiguous and main is not None and main.comps[-1].kind in ("id", "op")
    return _Structure(function, qualname, namespaces, template_args, tuple(reader.functors),
                      reader.sorted_lambdas(), truncated, plain, params)


def _classify(s: _Structure, parse_text: str, partial: str | None) -> tuple[str, str | None, str]:
    """(kind, library, detail)."""
    found = classify_library(KernelFacts(parse_text, s.function, s.qualname, s.namespaces)) if s.function else None
    if found is not None:
        return "library", found[0], found[1]
    if s.function and (s.plain or partial is not None):
        return "kernel", None, kernel_detail(s.qualname, s.namespaces, s.functors, s.lambdas)
    return "unknown", None, "not recognised as a kernel name"
