"""A traced run as text (one line per kernel launch, or per op on a host key, grouped by the user's
source line) and as JSON. Reads ``join.Entry`` records; no torch, no index.

    main.py:24 -> model.py:10
      torch.add -> aten::add.Tensor [CUDA] -> add.h:15 ufunc::add -> CUDALoops.cuh:18 vectorized_elementwise_kernel<4, CUDAFunctor_add<float>>  (3 launches, 41 µs)

Identical lines (same stack, function, op, key, kernel) are counted, not repeated.
"""
from __future__ import annotations

import json
import os

import re
from dataclasses import dataclass, field

from atenmap.errors import AtenmapError
from atenmap.model import SourceInfo, Step
from atenmap.trace.events import DEVICE_KEYS, Frame, Recording
from atenmap.trace.frames import display_path
from atenmap.trace.join import Entry, short_path

_QUALIFIER = re.compile(r"(?:[A-Za-z_]\w*|\(anonymous namespace\))::(?=[A-Za-z_~(])")
_AUTOGRAD_EVAL = "autograd::engine::evaluate_function: "
_MAX_KERNEL_CHARS = 100
_SINGULAR = {"calls": "call", "launches": "launch"}


def fmt_us(us: float) -> str:
    if us >= 1e6:
        return f"{us / 1e6:.2f} s"
    if us >= 1e3:
        return f"{us / 1e3:.1f} ms"
    return f"{us:.0f} µs"


def short_symbol(sym: str) -> str:
    m = re.match(r"TORCH_IMPL_FUNC\((\w+)\)", sym)
    if m:
        return m.group(1)
    for prefix in ("at::native::", "(anonymous namespace)::", "CPU_CAPABILITY::", "DEFAULT::"):
        sym = sym.replace(prefix, "")
    return sym


def short_kernel(name: str) -> str:
    """``void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>,
    std::array<char*, 3ul> >(int, ...)`` -> ``vectorized_elementwise_kernel<4, CUDAFunctor_add<float>>``."""
    from atenmap.resolve.kernelname import parse_kernel_name

    try:
        k = parse_kernel_name(name)
    except AtenmapError:  # an empty name, the parser's one refusal (tests/test_fuzz.py); show it as it came
        return _cut(name)
    if not k.function or k.kind not in ("kernel", "library"):
        return _cut(name)
    args = [_cut(_QUALIFIER.sub("", a).replace("> >", ">>"), 60) for a in k.template_args
            if not a.startswith("std::array<")]
    return _cut(k.function + (f"<{', '.join(args)}>" if args else ""))


def _cut(s: str, n: int = _MAX_KERNEL_CHARS) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"


def _parents(parents: tuple[str, ...], op: str) -> list[str]:
    """Profiler parents worth a place in the line: composite aten ops, autograd nodes (not the
    call's own op under another event name)."""
    base = op.split(".", 1)[0]
    own = {base, base.split("::")[-1]}
    out = []
    for p in parents:
        if p.startswith(_AUTOGRAD_EVAL) or p in own:
            continue
        if p.startswith("aten::") or "::" not in p:
            if not out or out[-1] != p:
                out.append(p)
    return out


def _step_text(s: Step) -> str:
    return f"{short_path(s)} {short_symbol(s.symbol)}"


def node_text(e: Entry) -> str:
    """``MulBackward0 (tools/autograd/derivatives.yaml:1212 mul.Tensor)``: the autograd node a
    backward call ran in and its derivatives.yaml entry (Note [Autograd nodes in a trace])."""
    n = e.node
    if n is None or n.entry is None:
        return e.call.node or ""
    return f"{n.name} ({n.entry} {n.op})"


def entry_text(e: Entry) -> str:
    """The line of one entry, without the counts."""
    parts: list[str] = []
    c = e.call
    if c is not None:
        if c.function:
            parts.append(c.function)
        parts += [p for p in _parents(c.parents, c.op) if p != c.node]
        if c.node:
            parts.append(node_text(e))
        key = c.key or "?"
        if e.chain is not None and e.chain.key != c.key:
            key += f" via {e.chain.key}"
        parts.append(f"{c.op} [{key}]")
    ch = e.chain
    if ch is not None:
        first = e.lead()
        if first is not None:
            parts.append(_step_text(first))
    if e.kernel is not None:
        site = e.site
        name = short_kernel(e.kernel.name) if e.kernel.kind == "kernel" else e.kernel.name
        if site is not None and site.launch is not None:
            parts.append(f"{short_path(site.launch)} {name}")
        else:
            parts.append(name)
    elif ch is not None:
        libs = ch.host_work(e.lead())[:2]  # See Note [The step that ran on the host]
        parts += [_step_text(s) for s in libs]
    if e.inductor is not None:
        parts.append(inductor_text(e.inductor))
    text = " -> ".join(parts)
    if e.notes:
        text += f"  [{e.notes[0]}]"
    return text


def inductor_text(k) -> str:
    """``c4f….py:56 (called :200) fuses aten.native_layer_norm; model.py:12``: a torch.compile
    kernel's definition in Inductor's output code, its call line, the ATen ops it fused, the user's lines."""
    where = f"{os.path.basename(k.file)}:{k.line}" if k.line else os.path.basename(k.file)
    text = f"{where} (called :{k.call_line})" if k.call_line else where
    if k.aten:
        text += f" fuses {', '.join(k.aten)}"
    if k.user:
        text += "; " + ", ".join(f"{os.path.basename(f)}:{ln}" for f, ln, _c in k.user[:4])
    return text


def stack_text(stack: tuple[Frame, ...], base: str | None = None) -> str:
    if not stack:
        return "(no user frame)"
    return " -> ".join(f"{display_path(f.file, base)}:{f.line}{first_line_mark(f)}" for f in stack)


# Note [A frame known by its first line]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A frame read from a chrome trace file has its function's first line only (``Frame.exact`` False:
# Note [Joining after the run]); shown bare, ``train.py:4`` would pass for the line that ran. Every
# place that writes a frame (stacks in text, JSON ``source``, chrome args; the table's user column)
# marks it ``train.py:4 (def main)``. A ``<module>`` frame has no ``def`` to name and is left bare.
def first_line_mark(f: Frame) -> str:
    """`` (def main)`` for a frame known only by its function's first line, else ``""``."""
    return "" if f.exact or not f.function or f.function == "<module>" else f" (def {f.function})"


@dataclass
class Line:
    text: str
    count: int = 0
    time_us: float = 0.0
    unit: str = "calls"


@dataclass
class Group:
    stack: tuple[Frame, ...] | None  # None: device work under no recorded call
    lines: dict[tuple, Line] = field(default_factory=dict)


def group(entries: list[Entry], key: str | None = None) -> list[Group]:
    """Entries worth a line (kernel launches; host-key ops), grouped by the user's stack in
    first-seen order. ``key``: only calls that ran on that key."""
    groups: dict[object, Group] = {}
    for e in entries:
        c = e.call
        if key and (c is None or c.key != key):
            continue
        if e.kernel is None and c is not None and c.key in DEVICE_KEYS:
            continue  # a view or metadata op on a device tensor: launched nothing
        gk = c.stack if c is not None else None
        g = groups.get(gk)
        if g is None:
            g = groups[gk] = Group(gk)
        lk = (c.function if c else None, c.parents if c else (), c.node if c else None, c.op if c else None,
              c.key if c else None, e.kernel.name if e.kernel else None)
        ln = g.lines.get(lk)
        if ln is None:
            ln = g.lines[lk] = Line(entry_text(e), unit="launches" if e.kernel is not None else "calls")
        ln.count += 1
        ln.time_us += e.kernel.duration_us if e.kernel is not None else (c.cpu_us if c else 0.0)
    return list(groups.values())


@dataclass
class Report:
    """What ``Trace.report()`` returns: ``str()`` (and the notebook's repr) is the text."""

    recording: Recording
    entries: list[Entry]
    source: SourceInfo | None = None
    warnings: list[str] = field(default_factory=list)
    key: str | None = None
    base: str | None = None  # paths are shown relative to this (default: cwd)

    def groups(self) -> list[Group]:
        return group(self.entries, self.key)

    def lines(self, warnings: bool = True) -> list[str]:
        rec = self.recording
        launches = rec.kernel_count
        head = f"{len(rec.calls)} aten calls"
        if rec.profiled:
            head += f", {launches} device launches"
        head += f"; torch {rec.torch_version}"
        if self.source is not None:
            head += f"; source PyTorch {self.source.version} at {self.source.root}"
        out = [head]
        for g in self.groups():
            out.append("")
            out.append(stack_text(g.stack, self.base) if g.stack is not None else "(device work under no traced call)")
            for ln in g.lines.values():
                unit = ln.unit if ln.count != 1 else _SINGULAR[ln.unit]
                out.append(f"  {ln.text}  ({ln.count} {unit}, {fmt_us(ln.time_us)})")
        out += [f"note: {n}" for n in rec.notes]
        out += [f"warning: {w}" for w in self.warnings] if warnings else []
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())

    def __repr__(self) -> str:  # a notebook shows the report itself
        return str(self)

    def to_dict(self) -> dict:
        memo: dict = {}  # see Entry.to_dict
        return {
            "torch_version": self.recording.torch_version, "torch_git": self.recording.torch_git,
            "cuda_available": self.recording.cuda_available, "profiled": self.recording.profiled,
            "source": self.source.to_dict() if self.source else None,
            "warnings": list(self.warnings), "notes": list(self.recording.notes), "key": self.key,
            "lines": [{"stack": [f"{f.file}:{f.line}" for f in g.stack] if g.stack is not None else None,
                       "entries": [{"text": ln.text, "count": ln.count, "time_us": ln.time_us, "unit": ln.unit}
                                   for ln in g.lines.values()]} for g in self.groups()],
            "entries": [e.to_dict(memo) for e in self.entries],
        }


def json_text(d: dict) -> str:
    """A report's dict as ``--json`` writes it: the top level indented, each element of its long lists
    (``entries``, ``lines``) on one line. json.dumps with ``indent`` runs the pure-Python encoder,
    about 5x slower than the C one that writes each entry here (docs/trace.md, "Overhead"); a value
    entries share (their chain, stack, site: Entry.to_dict's memo) is encoded once."""
    parts = []
    for k, v in d.items():
        if k in ("entries", "lines") and isinstance(v, list) and v:
            body = "[" + ",".join("\n  " + e for e in _encoded(v)) + "\n ]"
        else:
            body = json.dumps(v, indent=1).replace("\n", "\n ")
        parts.append(f" {json.dumps(k)}: {body}")
    return "{\n" + ",\n".join(parts) + "\n}"


def _encoded(items: list) -> list[str]:
    """``json.dumps`` of each item; the dict and list values that items share (the same object) are
    encoded once: put in as a placeholder string, then replaced by their text."""
    dumps = json.dumps
    token = "\x00atenmap-%s-" % os.urandom(6).hex()
    ids: dict[int, tuple] = {}  # id -> (value, placeholder, placeholder as encoded, the value's text)
    seen: dict[int, int] = {}
    for item in items:  # which values are shared
        if isinstance(item, dict):
            for v in item.values():
                if isinstance(v, (dict, list)) and v:
                    seen[id(v)] = seen.get(id(v), 0) + 1
    out = []
    for item in items:
        if not isinstance(item, dict):
            out.append(dumps(item))
            continue
        shallow, used = {}, []
        for k, v in item.items():
            if isinstance(v, (dict, list)) and v and seen.get(id(v), 0) > 1:
                hit = ids.get(id(v))
                if hit is None:
                    ph = token + str(len(ids))
                    hit = ids[id(v)] = (v, ph, dumps(ph), dumps(v))
                shallow[k] = hit[1]
                used.append(hit)
            else:
                shallow[k] = v
        text = dumps(shallow)
        for _v, _ph, encoded, body in used:
            text = text.replace(encoded, body, 1)
        out.append(text)
    return out


def entry_args(e: Entry, base: str | None = None) -> dict:
    """The ``args`` a chrome trace event of this entry gets (shown by Perfetto)."""
    c = e.call
    args: dict = {}
    if c is not None:
        args["atenmap.source"] = stack_text(c.stack, base)
        args["atenmap.op"] = f"{c.op} [{c.key}]"
        if c.function:
            args["atenmap.function"] = c.function
        if c.node:
            args["atenmap.autograd_node"] = node_text(e)
    ch = e.chain
    if ch is not None:
        for role, s in (("native", ch.native), ("stub", ch.stub), ("kernel", ch.kernel)):
            if s is not None:
                args[f"atenmap.{role}"] = f"{s.file}:{s.line} {s.symbol}" if s.file else s.symbol
        if ch.launches:
            args["atenmap.launches"] = "; ".join(f"{s.file}:{s.line} {s.symbol}" for s in ch.launches[:4])
    if e.site is not None:
        for role, s in (("kernel_definition", e.site.definition), ("kernel_launch", e.site.launch)):
            if s is not None:
                args[f"atenmap.{role}"] = f"{s.file}:{s.line} {s.symbol}"
    k = e.inductor
    if k is not None:
        args["atenmap.inductor_definition"] = f"{k.file}:{k.line}" if k.line else k.file
        if k.call_line:
            args["atenmap.inductor_call"] = f"{k.file}:{k.call_line}"
        args["atenmap.inductor_aten"] = ", ".join(k.aten)
        if k.user:
            args["atenmap.inductor_user"] = "; ".join(f"{f}:{ln} {c}" for f, ln, c in k.user[:8])
    if e.notes:
        args["atenmap.note"] = e.notes[0]
    return args


__all__ = ["Report", "entry_args", "entry_text", "first_line_mark", "fmt_us", "group", "json_text", "short_kernel"]
