"""Functions a ROCm build defines in ``.hip`` files, read as text (``--platform rocm``).

Note [Functions a ROCm build defines in .hip files]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
The index holds ``.cpp``/``.cu``/``.h`` files; the ``.hip`` files a ROCm build compiles in their place
(``native/transformers/hip/flash_attn/flash_api.hip``, ``native/hip/ck_gemm_*.hip``: aten's
CMakeLists.txt globs them into ``ATen_HIP_SRCS``) are not indexed. Where a chain on ``--platform
rocm`` calls a function whose indexed definitions a ROCm build does not compile (``pytorch_flash::
mha_fwd``, defined for CUDA in ``transformers/cuda/flash_attn/flash_api.cpp``: Note [What a ROCm
build leaves out] in rocmbuild.py), its definition is looked for in the tree's ``.hip`` files:

* a definition is a line at column 0 (not a keyword, not a ``#`` line) whose last name before ``(``
  is the callee's name, inside ``namespace`` blocks whose names end the callee's qualifier
  (``pytorch_flash`` for ``pytorch_flash::mha_fwd``; anonymous namespaces are skipped over), followed
  by ``{`` before any ``;``; its body ends at the matching ``}`` (strings and ``//`` comments skipped);
* in the body, each call ``NAME(`` whose name, or the name a ``using NS::NAME;`` before it in the
  body brings in, is a library call (resolve/libraries.py) is a library step at its line.

Only vendor calls are read from such a body, not ATen's own helpers or launches; ``#if`` inside a
``.hip`` file is not read (flash_api.hip is under ``USE_FLASH_ATTENTION`` as a whole). The bundled
index has no ``.hip`` text: there these steps are missing.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass

from atenmap.resolve.libraries import library_of

__all__ = ["HipDefinition", "HipSources"]

_ROOT = "aten/src/ATen"
_NAMESPACE = re.compile(r"^\s*namespace\s+([\w:]*)\s*\{")
_DEFINITION = re.compile(r"^(?!\s)(?!(?:if|for|while|switch|return|namespace|using|typedef|template|#)\b)"
                         r"[^;(]*?\b([A-Za-z_]\w*)\s*\(")
_CALL = re.compile(r"(?<![\w.>])((?:[A-Za-z_]\w*::)*[A-Za-z_]\w*)\s*(?:<[^<>;()]*>)?\s*\(")
_USING = re.compile(r"^\s*using\s+((?:\w+::)+)(\w+)\s*;")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'')


@dataclass(frozen=True)
class HipDefinition:
    qual: str  # pytorch_flash::mha_fwd
    file: str  # relative to the tree's root
    line: int
    calls: tuple[tuple[str, str, int], ...]  # (qualified library call, library, line)


class HipSources:
    """The tree's ``.hip`` files under aten/src/ATen, read once when first asked."""

    def __init__(self, root: str | None):
        self.root = root if root and os.path.isdir(root) else None
        self._defs: dict[str, list[HipDefinition]] | None = None

    def definitions(self, qual: str) -> list[HipDefinition]:
        """The ``.hip`` definitions of ``qual`` (``ns::name``, or a bare name), in path order."""
        if self._defs is None:
            self._defs = self._read()
        name = qual.lstrip(":").rsplit("::", 1)[-1]
        want = qual.lstrip(":").split("::")[:-1]
        return [d for d in self._defs.get(name, [])
                if d.qual.split("::")[:-1][-len(want):] == want or not want]

    def _read(self) -> dict[str, list[HipDefinition]]:
        out: dict[str, list[HipDefinition]] = {}
        if self.root is None:
            return out
        base = os.path.join(self.root, _ROOT)
        found = []
        for folder, dirs, files in os.walk(base):
            dirs.sort()
            found += [os.path.join(folder, f) for f in sorted(files) if f.endswith(".hip")]
        for full in found:
            try:
                with open(full, encoding="utf-8", errors="replace") as fh:
                    lines = fh.read().splitlines()
            except OSError:
                continue
            rel = os.path.relpath(full, self.root).replace(os.sep, "/")
            for d in _definitions(rel, lines):
                out.setdefault(d.qual.rsplit("::", 1)[-1], []).append(d)
        return out


def _code(line: str) -> str:
    return _STRING.sub('""', line.split("//", 1)[0])


def _definitions(rel: str, lines: list[str]) -> list[HipDefinition]:
    """The function definitions of one file (see the Note), with their library calls."""
    out, stack, n = [], [], 0  # stack: (namespace name, brace depth it opened at)
    depth = 0
    while n < len(lines):
        text = _code(lines[n])
        ns = _NAMESPACE.match(text)
        m = None if ns else _DEFINITION.match(text)
        if m:
            end = _body_end(lines, n)
            if end is not None:
                names = [s for s, _ in stack if s]
                qual = "::".join(names + [m.group(1)])
                out.append(HipDefinition(qual, rel, n + 1, tuple(_library_calls(lines, n, end))))
                n = end + 1
                continue
        for ch in text:
            if ch == "{":
                depth += 1
                if ns:
                    stack.append((ns.group(1), depth))
                    ns = None
            elif ch == "}":
                if stack and stack[-1][1] == depth:
                    stack.pop()
                depth -= 1
        n += 1
    return out


def _body_end(lines: list[str], first: int) -> int | None:
    """The 0-based line of the ``}`` closing the body that opens at or after line ``first``; None for
    a declaration (a ``;`` at depth 0 before any ``{``)."""
    depth, opened, paren = 0, False, 0
    for n in range(first, len(lines)):
        for ch in _code(lines[n]):
            if ch == "(":
                paren += 1
            elif ch == ")":
                paren -= 1
            elif ch == ";" and not opened and paren == 0:
                return None
            elif ch == "{":
                depth, opened = depth + 1, True
            elif ch == "}" and opened:
                depth -= 1
                if depth == 0:
                    return n
    return None


def _library_calls(lines: list[str], first: int, last: int) -> list[tuple[str, str, int]]:
    """(qualified name, library, 1-based line) of each vendor call in lines ``first..last`` (0-based)."""
    using: dict[str, str] = {}
    out = []
    for n in range(first, last + 1):
        text = _code(lines[n])
        u = _USING.match(text)
        if u:
            using[u.group(2)] = u.group(1) + u.group(2)
            continue
        for m in _CALL.finditer(text):
            name = m.group(1)
            qual = using.get(name, name) if "::" not in name else name
            lib = library_of(qual)
            if lib is not None and n > first:
                out.append((qual, lib, n + 1))
    return out
