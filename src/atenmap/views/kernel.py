"""Kernel matches (``Index.kernel``/``kernels``) as text: ``path:line  role  what`` per place, then
notes and operators; and ``Index.where``'s answer. Knows nothing of SQLite or typer."""
from __future__ import annotations

from atenmap.model import Role, Step
from atenmap.model_answers import InductorKernel, KernelMatch, Where
from atenmap.views.terminal import Line, Span, Terminal, shorten_middle
from atenmap.views.text import short_generated

_ROLE = {"definition": "kernel", "calls": "library", "functor": "native", "jit": "jit"}

MAX_LAUNCHES = 12
MAX_LIBRARY_CALLS = 10
MAX_OPERATORS = 12


def kernel_lines(m: KernelMatch, generated_root: str | None = None, count: int | None = None,
                 launched_by: dict[str, int] | None = None, term: Terminal | None = None,
                 operators: bool = True) -> list[str]:
    """One match. ``count``: its launches in a trace; ``launched_by``: operator -> launches, as the
    trace itself records them (Kineto's External id); ``term``: the width to fit (Note [Terminal output]);
    ``operators``: list the operators that can reach it (False where a trace recorded the op that did:
    then only their number)."""
    term = term or Terminal()
    return term.lines(_spans(m, generated_root, count, launched_by, term.width, operators))


def _spans(m: KernelMatch, gen: str | None, count: int | None, launched_by: dict[str, int] | None,
           width: int | None, operators: bool = True) -> list[Line]:
    head = m.qualname or m.function or m.query[:120]
    kind = f"{m.kind if m.kind != 'kernel' else 'library'}: {m.library}" if m.library else \
        (m.kind if m.kind != "kernel" else "")
    what = ", ".join(x for x in (kind, m.family, m.dtype) if x)
    tail = "".join((f"  ({count} launch{'es' if count != 1 else ''} in the trace)" if count else "",
                    f"  [{what}]" if what else ""))
    if width is not None and len(head) + len(tail) + 8 > width:  # a long name: on its own line
        out: list[Line] = [(Span("kernel:", "heading"), Span(tail.strip() and " " + tail.strip())), (Span(head),)]
    else:
        out = [(Span("kernel: ", "heading"), Span(head), Span(tail))]
    rows = []
    if m.definition:
        rows.append((m.definition, "definition", f"__global__ {m.definition.symbol}"))
    for s in m.launches[:MAX_LAUNCHES]:
        rows.append((s, "launch", s.symbol + (f"  — {s.detail}" if s.detail else "")))
    if len(m.launches) > MAX_LAUNCHES:
        rows.append((None, "launch", f"… {len(m.launches) - MAX_LAUNCHES} more launch lines"))
    for s in m.functors:
        rows.append((s, "jit" if s.role == Role.JIT else "functor", s.symbol + (f"  — {s.detail}" if s.detail else "")))
    for s in m.library_calls[:MAX_LIBRARY_CALLS]:
        rows.append((s, "calls", f"{s.symbol}  — {s.detail}" if s.detail else s.symbol))
    locs = [_loc(s, gen) for s, _, _ in rows]
    col = max((len(x) for x in locs), default=0)
    if width is not None:
        col = min(col, max(24, width * 2 // 5))
    for loc, (s, role, text) in zip(locs, rows):
        out.append((Span(f"{shorten_middle(loc, col):<{col}}  "), Span(f"{role:<10} ", f"role.{_ROLE.get(role, role)}"),
                    Span(short_generated(text, gen))))
    out += [(Span(f"note: {note}", "dim"),) for note in m.notes]
    if launched_by:
        out.append((Span("launched in this trace by: " + ", ".join(
            f"{op} ({n})" for op, n in sorted(launched_by.items(), key=lambda kv: -kv[1]))),))
    if operators:
        out += _operator_spans(m, gen, width)
    elif m.operators:
        out.append((Span(f"{len(m.operators)} operators can reach it (kernel NAME lists them)", "dim"),))
    return out


def _operator_spans(m: KernelMatch, gen: str | None, width: int | None) -> list[Line]:
    """The ranked operators, one a line, each followed by the step it reaches when that differs
    from the one before."""
    if not m.hits:
        return []
    shown = m.hits[:MAX_OPERATORS]
    out: list[Line] = [(Span(f"operators (most likely first{f', {len(shown)} of {len(m.hits)}' if len(m.hits) > len(shown) else ''}):",
                             "heading"),)]
    last = None
    for i, h in enumerate(shown, 1):
        out.append((Span(f"{i:>3}. "), Span(h.label(), "role.native"), Span(f"  — {h.reason}", "dim")))
        if h.step is not None and h.step != last:
            loc = _loc(h.step, gen)
            room = None if width is None else max(16, width - 12 - min(len(h.step.symbol), width // 3))
            out.append((Span("       at "), Span(shorten_middle(loc, room) if room else loc), Span(f"  {short_generated(h.step.symbol, gen)}")))
        last = h.step
    return out


def _loc(s: Step | None, gen: str | None) -> str:
    return short_generated(f"{s.file}:{s.line}", gen) if s is not None and s.file else ""


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
                 launchers: dict[str, dict[str, int]] | None = None, term: Terminal | None = None) -> str:
    """Several matches, a blank line between them; ``counts``/``launchers`` by kernel name, from a trace."""
    return "\n\n".join("\n".join(kernel_lines(m, generated_root, (counts or {}).get(m.query),
                                              (launchers or {}).get(m.query), term))
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
