"""Kernel matches (``Index.kernel``/``kernels``) as text: ``path:line  role  what`` per place, then
notes and operators; and ``Index.where``'s answer. Knows nothing of SQLite or typer."""
from __future__ import annotations

from atenmap.model import InductorKernel, KernelMatch, Where
from atenmap.views.text import short_generated

MAX_LAUNCHES = 12
MAX_LIBRARY_CALLS = 10
MAX_OPERATORS = 12


def kernel_lines(m: KernelMatch, generated_root: str | None = None, count: int | None = None,
                 launched_by: dict[str, int] | None = None) -> list[str]:
    """One match. ``count``: its launches in a trace; ``launched_by``: operator -> launches, as the
    trace itself records them (Kineto's External id)."""
    head = m.qualname or m.function or m.query[:120]
    lines = [f"kernel: {head}" + (f"  ({count} launch{'es' if count != 1 else ''} in the trace)" if count else "")
             + (f"  [{m.kind}{': ' + m.library if m.library else ''}]" if m.kind != "kernel" else "")]
    rows = []
    if m.definition:
        rows.append((m.definition, "definition", f"__global__ {m.definition.symbol}"))
    for s in m.launches[:MAX_LAUNCHES]:
        rows.append((s, "launch", s.symbol + (f"  — {s.detail}" if s.detail else "")))
    if len(m.launches) > MAX_LAUNCHES:
        rows.append((None, "launch", f"… {len(m.launches) - MAX_LAUNCHES} more launch lines"))
    for s in m.functors:
        rows.append((s, "functor", s.symbol + (f"  — {s.detail}" if s.detail else "")))
    for s in m.library_calls[:MAX_LIBRARY_CALLS]:
        rows.append((s, "calls", f"{s.symbol}  — {s.detail}" if s.detail else s.symbol))
    width = max((len(short_generated(f"{s.file}:{s.line}", generated_root)) for s, _, _ in rows if s), default=0)
    for s, role, text in rows:
        loc = short_generated(f"{s.file}:{s.line}", generated_root) if s else ""
        lines.append(f"{loc:<{width}}  {role:<10} {short_generated(text, generated_root)}")
    lines += [f"note: {note}" for note in m.notes]
    if launched_by:
        lines.append("launched in this trace by: " + ", ".join(
            f"{op} ({n})" for op, n in sorted(launched_by.items(), key=lambda kv: -kv[1])))
    if m.operators:
        lines.append("operators (most likely first): " + ", ".join(m.operators[:MAX_OPERATORS])
                     + (f", … ({len(m.operators)})" if len(m.operators) > MAX_OPERATORS else ""))
    if not m.found:
        lines.append("no kernel of that name in the index" + ("; nearest: " + ", ".join(m.nearest) if m.nearest else ""))
    return lines


def inductor_lines(k: InductorKernel) -> list[str]:
    """An Inductor kernel found in its output code: definition, call line, fused ops, user lines."""
    lines = [f"inductor {k.kind} kernel: {k.name}"]
    if k.line:
        lines.append(f"  defined   {k.file}:{k.line}")
    if k.call_line:
        lines.append(f"  called    {k.file}:{k.call_line}  (call())")
    if k.aten:
        lines.append(f"  aten      {', '.join(k.aten)}" + (f"  (source nodes: {', '.join(k.nodes)})" if k.nodes else ""))
    if k.overloads:
        lines.append(f"  overloads {', '.join(k.overloads)}")
    for f, ln, code in k.user:
        lines.append(f"  user      {f}:{ln}  {code}")
    if k.note:
        lines.append(f"note: {k.note}")
    return lines


def kernels_text(matches: list[KernelMatch], generated_root: str | None = None, counts: dict[str, int] | None = None,
                 launchers: dict[str, dict[str, int]] | None = None) -> str:
    """Several matches, a blank line between them; ``counts``/``launchers`` by kernel name, from a trace."""
    return "\n\n".join("\n".join(kernel_lines(m, generated_root, (counts or {}).get(m.query),
                                              (launchers or {}).get(m.query)))
                       for m in matches)


def kernels_json(matches: list[KernelMatch], counts: dict[str, int] | None = None,
                 launchers: dict[str, dict[str, int]] | None = None, single: bool = False) -> list[dict] | dict:
    """JSON-ready dicts; with ``counts`` (a trace), each also gets ``count`` and ``trace_operators``.
    ``single``: one match answers as an object, not a list of one."""
    out = []
    for m in matches:
        d = m.to_dict()
        if counts is not None:
            d["count"] = counts.get(m.query, 0)
            d["trace_operators"] = (launchers or {}).get(m.query, {})
        out.append(d)
    return out[0] if single and len(out) == 1 else out


def where_lines(w: Where, total: int | None = None) -> list[str]:
    """The function, then the operators reaching it, nearest first (``total``: how many there are
    when ``w.operators`` is the first few)."""
    lines = [f"{w.loc}  {w.function}  (lines {w.loc.line}-{w.end_line})"]
    if w.operators:
        lines.append(f"operators reaching it ({total or len(w.operators)}, nearest first):")
        lines += [f"  {o}" for o in w.operators]
    else:
        lines.append("no operator reaches it through the indexed call graph")
    return lines
