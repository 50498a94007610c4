"""Itanium-mangled kernel names (``_Z...``) -> the text the GNU demangler prints.

Note [Demangling]
~~~~~~~~~~~~~~~~~
Itanium-mangled names (``_Z...``) are demangled by ``c++filt`` when it is on PATH: one subprocess per
batch (:func:`demangle_many`), and a demangler crash on hostile input cannot take the process down.
Without c++filt, libstdc++'s ``__cxa_demangle`` is called through ctypes (present on any Linux with a
C++ runtime; no new dependency). Both are libiberty's demangler and print identical text. If neither
can demangle a name, the name comes back unchanged, and parse_kernel_name reads the leading qualified
name straight from the mangling (:func:`partial_demangle`) so the lookup still has a function.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools
import re
import shutil
import subprocess
from typing import Iterable

from atenmap.names import ANONYMOUS
from atenmap.resolve.kernelname.records import MAX_NAME_CHARS

__all__ = ["demangle", "demangle_many", "is_mangled", "partial_demangle"]

_MANGLED_RE = re.compile(r"_Z[A-Za-z0-9_$.]+\Z")


def is_mangled(text: str) -> bool:
    """Whether ``text`` is one whole Itanium-mangled name."""
    return bool(_MANGLED_RE.match(text))


def demangle(name: str) -> str:
    """The demangled form of an Itanium-mangled name; ``name`` unchanged if it is not one or fails.

    >>> demangle("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_15CUDAFunctor_addIfEESt5arrayIPcLm3EEEEviT0_T1_")
    'void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)'
    """
    return demangle_many([name])[0]


def demangle_many(names: Iterable[str]) -> list[str]:
    """:func:`demangle` for many names at once (one ``c++filt`` run); same order, same length."""
    out = list(names)
    wanted: dict[str, list[int]] = {}
    for i, name in enumerate(out):
        s = name.strip()
        if len(s) <= MAX_NAME_CHARS and _MANGLED_RE.match(s):
            wanted.setdefault(s, []).append(i)
    if not wanted:
        return out
    keys = list(wanted)
    for key, text in zip(keys, _demangle_batch(tuple(keys))):
        if text is not None:
            for i in wanted[key]:
                out[i] = text
    return out


@functools.lru_cache(maxsize=256)
def _demangle_batch(names: tuple[str, ...]) -> list[str | None]:
    got = _demangle_cxxfilt(names)
    if got is not None:
        return got
    return [_demangle_cxa(n) for n in names]


def _demangle_cxxfilt(names: tuple[str, ...]) -> list[str | None] | None:
    """None where c++filt is missing or misbehaved as a whole; per name, None where it could not demangle."""
    exe = shutil.which("c++filt")
    if exe is None:
        return None
    try:
        proc = subprocess.run(
            [exe, "-n"],  # -n: no underscore stripping (the default on ELF; not on Mach-O)
            input="\n".join(names) + "\n",
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="replace",
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    if proc.returncode != 0:
        return None
    lines = proc.stdout.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if len(lines) != len(names):
        return None
    return [None if text == name else text for text, name in zip(lines, names)]


@functools.lru_cache(maxsize=1)
def _cxa_functions():
    """(``__cxa_demangle``, ``free``) from the C++ runtime, or None."""
    candidates = ["libstdc++.so.6", ctypes.util.find_library("stdc++"), "libc++abi.so.1", ctypes.util.find_library("c++abi")]
    for lib in candidates:
        if not lib:
            continue
        try:
            fn = getattr(ctypes.CDLL(lib), "__cxa_demangle")
            libc = ctypes.CDLL(None)
            free = libc.free
        except (OSError, AttributeError):
            continue
        fn.restype = ctypes.c_void_p
        fn.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
        free.restype = None
        free.argtypes = [ctypes.c_void_p]
        return fn, free
    return None


def _demangle_cxa(name: str) -> str | None:
    fns = _cxa_functions()
    if fns is None:
        return None
    fn, free = fns
    status = ctypes.c_int(0)
    ptr = fn(name.encode("ascii", "replace"), None, None, ctypes.byref(status))
    if not ptr:
        return None
    try:
        return ctypes.string_at(ptr).decode("utf-8", "replace") if status.value == 0 else None
    finally:
        free(ptr)


_SOURCE_NAME_LEN_RE = re.compile(r"\d{1,6}")


def partial_demangle(mangled: str) -> str | None:
    """The leading qualified name of a mangled function: ``_ZN2at6native4fooI...`` -> ``at::native::foo``.

    Reads only ``<source-name>`` pieces of the first nested name (and ``St``); stops at anything else.
    Enough for the lookup when the full demangling failed (e.g. a mangled name cut short by a table).
    """
    s = mangled
    if not s.startswith("_Z"):
        return None
    i = 2
    if s.startswith("L", i):  # internal linkage
        i += 1
    nested = s.startswith("N", i)
    if nested:
        i += 1
        while i < len(s) and s[i] in "rVKRO":  # cv- and ref-qualifiers of a member function
            i += 1
    parts: list[str] = []
    while i < len(s):
        if s.startswith("St", i):
            parts.append("std")
            i += 2
            continue
        m = _SOURCE_NAME_LEN_RE.match(s, i)
        if not m:
            break
        n = int(m.group())
        ident = s[m.end() : m.end() + n]
        if n == 0 or len(ident) != n:
            break
        parts.append(ANONYMOUS if ident.startswith("_GLOBAL__N") else ident)
        i = m.end() + n
        if not nested:
            break
    return "::".join(parts) or None
