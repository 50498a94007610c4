"""Inductor's output code: from a kernel name (``triton_poi_fused_gelu_0``, ``cpp_fused_add_relu_0``,
``extern_kernels.mm``, ``torch.ops.aten._scaled_dot_product_efficient_attention.default``) to the
file in the Inductor cache that defines or calls it, its lines, the ATen ops it fused and, where the
output code or a compile-time record has them, the user's lines. Reads files only: nothing imported.

Note [Inductor output code]
~~~~~~~~~~~~~~~~~~~~~~~~~~~
torch.compile's Inductor writes one Python module per compiled graph into its cache
(``$TORCHINDUCTOR_CACHE_DIR``, else ``<tmp>/torchinductor_<user>``), ``<xx>/c<hash>.py``:
- each generated kernel is a module-level ``NAME = async_compile.triton('NAME', '''...''')`` (or
  ``.cpp_pybinding([...], r'''...''')`` / ``.cpp(...)`` on CPU), after comments
  ``# Topologically Sorted Source Nodes: [add, y], Original ATen: [aten.add, aten.relu]``
  (the FX nodes of the user's graph, named after the user's variables, and the ATen packets they
  became), ``# Source node to ATen node mapping:`` and ``# Graph fragment:`` (lines
  ``%add : ... = call_function[target=torch.ops.aten.add.Tensor](...)``: the overloads);
- ``call(args)`` (a function, or ``Runner.call`` in newer versions) launches them in order:
  ``NAME.run(...)`` for Triton, ``NAME(...)`` for C++; extern kernels are
  ``extern_kernels.mm(...)`` and fallbacks ``torch.ops.aten.X.default(...)``; the same
  ``# Topologically Sorted ...`` comment precedes a call (torch 2.13 on CPU puts it before extern
  calls only), and with ``provenance_tracking_level`` a ``# [Provenance debug handles] NAME:N`` line.
A kernel's fused ATen ops are the definition's comment, else the comment just before its call
(back to the previous call), else read from its name (``cpp_fused__softmax_1`` -> ``_softmax``,
marked so). The same name is made again by every graph that needs it: the newest file wins and
the others are counted.

Note [Reading the Inductor cache]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
The cache is outside files (issue 34): ``<tmp>/torchinductor_<user>`` can be made by anyone first,
and any file in it can be a FIFO, a symlink to ``/dev/zero`` or out of the cache, or huge. So a
cache folder in a shared temp folder must be the user's (files.check_owner; one line, the folder
is skipped); files are listed newest first by mtime, MAX_FILES of them (files.newest_files: only
regular files, no symlink out of the folder); each is read through files.read_bytes, at most
MAX_OUTPUT_BYTES, and parsed through limits.parse_python (a depth or size fault is one note,
never a traceback). Texts are read when asked and not kept: what an ``OutputNames`` keeps per
file is the kernel names it defines, keyed by the file's (inode, size, mtime, ctime), so a file
rewritten or deleted is never answered from an old read (issue 34, item 9).
"""
from __future__ import annotations

import ast
import dataclasses
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from atenmap import files
from atenmap.limits import Unparsable, parse_python
from atenmap.model_answers import InductorKernel

_SOURCE_NODES = re.compile(r"#\s*Topologically Sorted Source Nodes: \[(.*?)\], Original ATen: \[(.*?)\]")
_GRAPH_TARGET = re.compile(r"call_function\[target=torch\.ops\.(aten\.[\w.]+)\]")
_EXTERN = re.compile(r"^extern_kernels\.(\w+)$")
_FALLBACK = re.compile(r"^(?:torch\.ops\.)?aten\.(\w+)(?:\.(\w+))?$")
_GENERATED = re.compile(r"^(triton|cpp)_(?:poi|red|per|tem|for|spl|mm)?_?(?:fused_)?(.*?)(?:_\d+)?$")
MAX_FILES = 20000  # the newest output files looked at (Note [Reading the Inductor cache])
MAX_OUTPUT_BYTES = 16 << 20  # one output file, read and parsed (real ones: a few MB at most)
_DEFINED = re.compile(rb"^(\w+) = async_compile\.", re.M)


def default_cache_dirs() -> list[Path]:
    """``$TORCHINDUCTOR_CACHE_DIR``, else Inductor's default ``<tmp>/torchinductor_<user>``."""
    env = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    if env:
        return [Path(env)]
    try:
        user = os.getlogin()
    except OSError:
        import getpass

        user = getpass.getuser()
    return [Path(tempfile.gettempdir()) / f"torchinductor_{user.replace(' ', '_')}"]


@dataclass(frozen=True)
class _Site:
    """One kernel's place in one output-code file."""

    line: int | None  # the definition (None: extern / fallback)
    call_line: int | None
    nodes: tuple[str, ...]
    aten: tuple[str, ...]
    overloads: tuple[str, ...]
    handle: str = ""  # ``NAME:N`` of its ``# [Provenance debug handles]`` line


_HANDLE = re.compile(r"#\s*\[Provenance debug handles\]\s*(\S+:\d+)")
_FRAME = re.compile(r'File "([^"]+)", line (\d+), in [^\n]*\n\s*(.*)')

# Note [User lines of a kernel]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# The output code holds no stack traces. With ``config.trace.provenance_tracking_level`` >= 1
# Inductor keeps, per ``NAME:handle``, the stack traces of the FX nodes a kernel was made from
# (``torch._inductor.debug._inductor_kernel_stack_trace``) and writes the handle above the kernel's
# call. ``atenmap trace`` records that table per output file while the script compiles
# (trace/record.py) into ``<atenmap cache>/inductor/``; ``find_kernel`` joins it through the handle.
# A stack trace's user line is its last frame outside torch (and outside atenmap).


def user_frames(stack_traces, skip=("/torch/", "/atenmap/", "<frozen")) -> tuple[tuple[str, int, str], ...]:
    """The last frame outside ``skip`` of each stack trace (as FX writes them), deduplicated."""
    out = []
    for st in stack_traces or ():
        frames = [(f, int(ln), code.strip()) for f, ln, code in _FRAME.findall(st or "")
                  if not any(x in f for x in skip)]
        if frames:
            out.append(frames[-1])
    return tuple(dict.fromkeys(out))


def provenance_dir() -> Path:
    from atenmap.source.find import cache_dir

    return cache_dir() / "inductor"


def provenance_path(output_file: str | Path, folder: Path | None = None) -> Path:
    import hashlib

    key = hashlib.sha256(str(Path(output_file).resolve()).encode()).hexdigest()[:24]
    return (folder or provenance_dir()) / f"{key}.json"


def recorded_provenance(output_file: str | Path) -> dict[str, list[str]]:
    """``NAME:handle -> stack traces`` recorded for this output file (Note [User lines of a kernel])."""
    import json

    try:
        data = json.loads(provenance_path(output_file).read_text())
    except (OSError, ValueError):
        return {}
    return data.get("kernels", {}) if isinstance(data, dict) else {}


def output_files(dirs: list[Path], refused: list[str] | None = None) -> list[Path]:
    """The output-code candidates under ``dirs`` (``*.py``), the MAX_FILES newest, newest first.
    A folder in a shared temp folder that is not the user's is skipped, its line added to
    ``refused`` (Note [Reading the Inductor cache])."""
    found = []
    for d in dirs:
        if not d.is_dir():
            continue
        try:
            files.check_owner(d)
        except OSError as exc:
            if refused is not None:
                refused.append(str(exc))
            continue
        found.extend(files.newest_files(d, ".py", MAX_FILES))
    return sorted(found, key=_mtime, reverse=True)[:MAX_FILES]


def _mtime(p: Path) -> int:
    try:
        return p.stat().st_mtime_ns
    except OSError:
        return 0


def _read(path: Path, root: Path) -> bytes:
    """One output file's bytes through the bounded reader; b"" for one refused or gone."""
    try:
        return files.read_bytes(path, MAX_OUTPUT_BYTES, root=root)
    except OSError:
        return b""


class OutputNames:
    """Which kernels each output file defines, read once per version of the file: its (inode,
    size, mtime, ctime) is checked at every look-up, and only the names are kept, never the text
    (Note [Reading the Inductor cache]). Owned by whoever asks many names (an open Index, one join)."""

    def __init__(self):
        self._names: dict[str, tuple[tuple[int, int, int, int], frozenset[bytes], bool]] = {}

    def defines(self, path: Path, root: Path) -> tuple[frozenset[bytes], bool]:
        """(the names ``NAME = async_compile.`` defines, whether it has ``def call(``)."""
        try:
            st = os.stat(path)
        except OSError:
            return frozenset(), False
        key = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        kept = self._names.get(str(path))
        if kept is None or kept[0] != key:
            data = _read(path, root)
            kept = (key, frozenset(_DEFINED.findall(data)), b"def call(" in data)
            self._names[str(path)] = kept
        return kept[1], kept[2]


def aten_op(kernel: InductorKernel) -> str | None:
    """The operator an extern or fallback kernel runs, as atenmap names it (``mm``, ``add.Tensor``)."""
    if kernel.kind == "extern":
        return _EXTERN.match(kernel.name).group(1)
    if kernel.kind == "fallback":
        m = _FALLBACK.match(kernel.name.removeprefix("torch.ops."))
        return m.group(1) + (f".{m.group(2)}" if m.group(2) and m.group(2) != "default" else "") if m else None
    return None


def missing_note(name: str, dirs: list[Path] | None = None) -> str:
    """Why ``find_kernel`` found nothing, in one line."""
    dirs = dirs if dirs is not None else default_cache_dirs()
    where = ", ".join(str(d) for d in dirs)
    if not any(d.is_dir() for d in dirs):
        return f"{name}: no Inductor cache at {where} (set TORCHINDUCTOR_CACHE_DIR to the one the run used)"
    for d in dirs:
        try:
            if d.is_dir():
                files.check_owner(d)
        except OSError as exc:
            return f"{name}: not looked up: {exc}"
    return f"{name}: not in the output code of the Inductor cache at {where} (another cache, or cleared since?)"


# Note [C++ kernel profile ranges]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# With ``config.cpp.enable_kernel_profile`` each C++ kernel opens a RecordFunction range on entry
# (``torch::aot_inductor::RAIIAtenRecordFunctionHandle record_...("graph_0_cpp_fused_add_relu_0",
# nullptr);`` in its body, torch 2.13), named after the kernel with the graph's id in front when
# the graph has one: the profiler's op event is ``graph_0_cpp_fused_add_relu_0`` while the output
# code defines ``cpp_fused_add_relu_0``. The id tells apart graphs that made the same name: the
# output file holding that quoted range name is preferred.
_PROFILE_RANGE = re.compile(r"^graph_\d+_(cpp_\w+)$")


def kernel_name(name: str) -> str:
    """The output code's name of a kernel event: ``graph_0_cpp_fused_relu_0`` -> ``cpp_fused_relu_0``
    (Note [C++ kernel profile ranges]); any other name as it is."""
    m = _PROFILE_RANGE.match(name)
    return m.group(1) if m else name


def kind_of(name: str) -> str:
    """triton, cpp, extern, fallback or "" (not an Inductor name)."""
    name = kernel_name(name)
    if _EXTERN.match(name):
        return "extern"
    if name.startswith(("triton_", "cpp_")):
        return name.split("_", 1)[0]
    if _FALLBACK.match(name) and ("." in name):
        return "fallback"
    return ""


def find_kernel(name: str, cache_dirs: list[Path] | None = None,
                known: set[str] | frozenset[str] | None = None, provenance=recorded_provenance,
                names: OutputNames | None = None) -> InductorKernel | None:
    """The kernel ``name`` in the newest output code of the Inductor cache (``cache_dirs``, else
    ``default_cache_dirs()``), or None when no file there defines or calls it. ``known``: operator
    names, to read fused ops from a name (``name_ops``); ``provenance``: output file -> its recorded
    ``NAME:handle -> stack traces`` (Note [User lines of a kernel]); ``names``: the asker's
    ``OutputNames`` (a new one when None). See Note [Inductor output code] and Note [Reading the
    Inductor cache]."""
    kind = kind_of(name)
    if not kind:
        return None
    event, name = name, kernel_name(name)
    dirs = cache_dirs if cache_dirs is not None else default_cache_dirs()
    names = names if names is not None else OutputNames()
    needle = _needle(name, kind).encode()
    hits: list[tuple[Path, Path]] = []  # (file, its cache folder); the texts are read again when parsed
    for root in dirs:
        for p in output_files([root]):
            if kind in ("triton", "cpp"):
                defined, has_call = names.defines(p, root)
                found = has_call and name.encode() in defined
            else:
                data = _read(p, root)
                found = needle in data and b"def call(" in data
            if found:
                hits.append((p, root))
    hits.sort(key=lambda h: _mtime(h[0]), reverse=True)
    hits = hits[:51]
    if event != name:  # the graph's own file first: See Note [C++ kernel profile ranges]
        hits.sort(key=lambda h: f'"{event}"'.encode() not in _read(*h))
    faults = []
    for p, root in hits:
        text = _read(p, root).decode("utf-8", "replace")
        try:
            site = parse_site(text, name, kind, what=str(p))
        except Unparsable as exc:
            faults.append(str(exc))
            continue
        if site is not None:
            user = user_frames(provenance(p).get(site.handle)) if site.handle and provenance else ()
            k = _kernel(name, kind, p, site, len(hits) - 1, known)
            k = dataclasses.replace(k, device="cuda" if "empty_strided_cuda(" in text else
                                    "cpu" if "empty_strided_cpu(" in text else "")
            if not user:
                why = ("no user lines: none recorded for this output file (`atenmap trace` records Inductor's "
                       "provenance while the script compiles)")
                k = dataclasses.replace(k, note=f"{k.note}; {why}" if k.note else why)
            return dataclasses.replace(k, user=user)
    if hits:
        why = faults[0] if faults else (f"{hits[0][0]}: names {name} but not as this atenmap reads output code "
                                        "(another torch version's format?)")
        return InductorKernel(name, str(hits[0][0]), None, None, kind=kind, note=why)
    return None


def _needle(name: str, kind: str) -> str:
    if kind in ("triton", "cpp"):
        return f"{name} = async_compile."
    if kind == "extern":
        return f"{name}("
    return name.removeprefix("torch.ops.") + "("


def _kernel(name: str, kind: str, path: Path, site: _Site, others: int, known=None) -> InductorKernel:
    aten = site.aten
    note = ""
    if not aten and kind in ("triton", "cpp"):
        aten = name_ops(name, known)
        note = "fused ops read from the kernel's name (no Source Nodes comment in the output code)" if aten else ""
    elif kind in ("extern", "fallback"):
        op = f"aten.{_EXTERN.match(name).group(1)}" if kind == "extern" else name.removeprefix("torch.ops.")
        if aten and aten != (op,):
            note = f"the output code's comment on this call names {', '.join(aten)}"
        aten = (op,)
    if others:
        note = (note + "; " if note else "") + f"{others} older output file(s) of the cache also have {name}"
    return InductorKernel(name, str(path), site.line, site.call_line, aten, site.nodes, (), site.overloads, kind, note)


def name_ops(name: str, known: set[str] | frozenset[str] | None = None) -> tuple[str, ...]:
    """The ATen packets a generated kernel's name is made of (``config.*.descriptive_names`` is
    ``original_aten`` by default): ``cpp_fused__softmax_1`` -> ``aten._softmax``. The name joins
    them with ``_``: with ``known`` (operator names) the longest known run of words is taken first,
    else each word is one op (a leading ``_`` stays with its word)."""
    m = _GENERATED.match(name)
    if not m or not m.group(2):
        return ()
    words: list[str] = []
    for w in m.group(2).split("_"):
        if words and words[-1] == "_":
            words[-1] += w
        elif w:
            words.append(w)
        else:
            words.append("_")
    out, i = [], 0
    while i < len(words):
        j = next((j for j in range(len(words), i, -1) if known and "_".join(words[i:j]) in known), i + 1)
        out.append("aten." + "_".join(words[i:j]))
        i = j
    return tuple(dict.fromkeys(out))


def parse_site(text: str, name: str, kind: str, what: str = "<output code>") -> _Site | None:
    """Where ``name`` is defined and called in one output-code file, with the comments on it.
    ``Unparsable`` (one line) for a text too large or deep (Note [Reading the Inductor cache])."""
    lines = text.splitlines()
    try:
        tree = parse_python(text, what, max_bytes=MAX_OUTPUT_BYTES)
    except Unparsable as exc:
        if "not valid Python" in str(exc):
            return None
        raise
    define = None
    if kind in ("triton", "cpp"):
        define = next((n.lineno for n in tree.body if isinstance(n, ast.Assign) and len(n.targets) == 1
                       and isinstance(n.targets[0], ast.Name) and n.targets[0].id == name), None)
        if define is None:
            return None
    calls = _calls(tree, name, kind)
    call_line = calls[0] if calls else None
    nodes, aten, overloads = _comments(lines, define) if define else ((), (), ())
    if not aten and call_line:
        nodes, aten, overloads = _comments(lines, call_line, stop=_previous_call(tree, call_line))
    if define is None and call_line is None:
        return None
    return _Site(define, call_line, nodes, aten, overloads, _handle_at(lines, call_line, name) if call_line else "")


def _handle_at(lines: list[str], call_line: int, name: str) -> str:
    """The ``NAME:N`` provenance handle in the comments right above ``call_line``."""
    for i in range(call_line - 2, max(call_line - 8, -1), -1):
        m = _HANDLE.search(lines[i])
        if m and m.group(1).rsplit(":", 1)[0] in (name, name.removeprefix("torch.ops.")):
            return m.group(1)
        if not lines[i].strip().startswith("#"):
            continue
    return ""


def _call_fns(tree: ast.Module) -> list[ast.FunctionDef]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "call"]


def _calls(tree: ast.Module, name: str, kind: str) -> list[int]:
    """The lines in ``call()`` that launch ``name``."""
    out = []
    for fn in _call_fns(tree):
        for node in ast.walk(fn):
            if not isinstance(node, ast.Call):
                continue
            text = _dotted(node.func)
            if text == name or (kind == "triton" and text == f"{name}.run") or (
                    kind == "fallback" and text.removeprefix("torch.ops.") == name.removeprefix("torch.ops.")):
                out.append(node.lineno)
    return sorted(out)


def _dotted(node: ast.AST) -> str:
    """``a.b.c`` of a name or attribute chain, iteratively (a deep chain is data, not a recursion
    limit); "" for anything else."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return ""
    parts.append(node.id)
    return ".".join(reversed(parts))


def _previous_call(tree: ast.Module, line: int) -> int:
    """The line of the last statement of ``call()`` before ``line`` that calls something (0: none)."""
    best = 0
    for fn in _call_fns(tree):
        for st in fn.body:
            if st.lineno < line and isinstance(st, ast.Expr) and isinstance(st.value, ast.Call):
                best = max(best, st.end_lineno or st.lineno)
    return best


def _comments(lines: list[str], at: int, stop: int = 0) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """(source nodes, ATen packets, overloads) of the comment block right above line ``at`` (1-based),
    not reaching back past line ``stop``."""
    i = at - 2
    block: list[str] = []
    while i >= max(stop, 0) and i < len(lines):
        s = lines[i].strip()
        if s.startswith("#"):
            block.append(s)
        elif s and not s.startswith(("del ", "buf", "assert_size_stride", "assert_alignment")) and "empty_strided" not in s:
            break
        elif not s and block and not lines[i - 1].strip().startswith("#"):
            break
        i -= 1
    nodes: tuple[str, ...] = ()
    aten: tuple[str, ...] = ()
    for s in block:
        m = _SOURCE_NODES.search(s)
        if m:
            nodes = tuple(x.strip() for x in m.group(1).split(",") if x.strip())
            aten = tuple(x.strip() for x in m.group(2).split(",") if x.strip())
            break
    overloads = tuple(dict.fromkeys(m.group(1) for s in reversed(block) for m in [_GRAPH_TARGET.search(s)] if m))
    return nodes, aten, overloads
