"""What each tool of ``atenmap mcp`` answers, from an open Index: the JSON ``--json`` prints (as a
dict, for the tool's structured content) and a few lines of text for the agent to read first.
Neither the MCP SDK nor typer is imported here: mcp_server.py wires these to the protocol.

Note [Answers that fit an agent's context]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
An agent pays for every token of an answer, and many clients show the model only the text part
of a tool result. So every list is cut to ``limit`` (the total is stated: "42 of 3,657 operators
shown"), and a chain leads with its ``runs``: the launch, library and jiterator steps it reaches,
each once, with file:line and the function that makes it — what "where is the kernel of X" asks.
The full tree stays in the structured content, as ``atenmap OP --json`` prints it.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from atenmap.config import printable
from atenmap.errors import AtenmapError, UsageError

TEXT_ROWS = 20  # rows of a list the text part shows (the structured content holds `limit` of them)


@dataclass(frozen=True)
class Answer:
    data: dict  # the structured content: the CLI's --json, with totals where a list was cut
    text: str  # what the agent reads first


def _answer(data: dict, lines: list[str]) -> Answer:
    """An Answer whose text is ``lines``, each with its control characters escaped as the CLI's text
    output escapes them (config.printable): a file name, a root or version.txt holding ESC or a
    newline cannot forge lines in what the agent reads (issue 34, item 6). JSON escapes its own."""
    return Answer(data, "\n".join(printable(line) for line in lines))


def _count(shown: int, total: int, what: str) -> str:
    return f"{shown:,} of {total:,} {what} shown" if shown < total else f"{total:,} {what}"


def _limit(limit: int | None) -> int | None:
    if limit is not None and limit < 0:
        raise UsageError(f"limit {limit}: give 0 (all) or a positive number")
    return limit or None


# ---- chain ------------------------------------------------------------------------------------
def chain_runs(chain, link=None) -> list[dict]:
    """The launch, library and jit steps of every key of ``chain``, each (key, role, place) once,
    in the chain's order, with the function they sit in (``in``). See Note [Answers that fit an
    agent's context]."""
    out, seen = [], set()
    for kc in chain.keys:
        todo = [(s, None) for s in reversed(kc.steps)]
        while todo:
            step, parent = todo.pop()
            todo += [(c, step) for c in reversed(step.children)]
            if not step.role.runs_on_device:  # only the steps that put work on the device
                continue
            mark = (kc.key, step.role.value, step.symbol, step.file, step.line)
            if mark in seen:
                continue
            seen.add(mark)
            run = {"key": kc.key, "role": step.role.value, "symbol": step.symbol, "file": step.file,
                   "line": step.line, "in": parent.symbol if parent is not None else None}
            if link is not None:
                run["link"] = link(step)
            out.append(run)
    return out


def chain_answer(ix, op: str, key: str | list[str] | None = None, why: bool = False,
                 backward: bool = False, depth: int = 8, dtype: str | None = None, shape: str | None = None,
                 example: str | None = None, platform: str | None = None) -> Answer:
    """``atenmap OP [--key K] [--why] [--backward] [--dtype D] [--shape S] [--example E] [--platform P]
    --json``, with ``runs`` first."""
    from atenmap.cli.chain_run import call_facts, check_platform, load_chain_for
    from atenmap.views import links
    from atenmap.views import text as render

    keys = [k.strip() for k in key.split(",") if k.strip()] if isinstance(key, str) else key
    notes: list[str] = []
    platform = check_platform(platform)
    facts = call_facts(op, dtype, shape, example)
    chain, more, bwd, _python = load_chain_for(ix, op, keys or None, depth, why=why, backward=backward, note=notes.append,
                                               facts=facts, platform=platform)
    loc = links.linker(chain, None)
    if loc is not None and loc.warning:
        notes.append(loc.warning)
    d = json.loads(render.chain_json(chain, link=loc))  # as chain_run.show_chain prints --json
    if bwd is not None:
        from atenmap.views.backward import backward_dict

        d["backward"] = backward_dict(bwd, link=loc)
    runs = d.pop("runs")  # Chain.runs, main path first (resolve/runs.py), as --json prints them
    if loc is not None:
        for run, r in zip(runs, chain.runs):
            if (link := loc(r)) is not None:
                run["link"] = link
    steps = sum(1 for kc in chain.keys for _ in kc.walk())
    data = {"op": d.pop("op"), "runs": runs, "steps": steps, **d, "notes": notes,
            "other_keys": more}
    lines = [f"{data['op']}: {data['schema']}", f"source: {chain.source.root} (PyTorch {chain.source.version})",
             f"{steps} steps for {', '.join(kc.key for kc in chain.keys) or 'no key'}"
             + (f"; other keys: {', '.join(more)}" if more else "")]
    lines += notes + [f"warning: {w}" for w in chain.warnings]
    if chain.given:
        lines.append("for your call: " + " · ".join(chain.given))
    if chain.unapplied:
        lines.append(render.UNAPPLIED.format(" · ".join(chain.unapplied)))
    lines.append(f"runs ({len(runs)}):" if runs else "runs: none (no launch, library call or jiterator kernel reached)")
    lines += _run_lines(runs)
    calls = list(dict.fromkeys(s.symbol for kc in chain.keys for s in kc.walk() if s.role.value == "op_call"))
    if calls:
        lines.append(f"operators it calls ({len(calls)}; each has a chain of its own): " + ", ".join(calls[:TEXT_ROWS]))
    if bwd is not None:
        data["backward_runs"] = chain_runs(bwd, loc)
        lines.append(f"backward: node {bwd.node or 'none'}, {len(bwd.formulas)} formulas, "
                     f"{len(data['backward_runs'])} runs (the structured content's `backward`, `backward_runs`)")
        lines += _run_lines(data["backward_runs"])
    return _answer(data, lines)


def _run_lines(runs: list[dict]) -> list[str]:
    """The text rows of a ``runs`` list: a chain's (Chain.runs: ``name``, ``via``) or a backward's
    (chain_runs: ``symbol``, ``in``), the first TEXT_ROWS of them."""
    def row(r: dict) -> str:
        what = r.get("name") or r.get("symbol")
        where = f"  (via {' -> '.join(r['via'])})" if r.get("via") else f"  (in {r['in']})" if r.get("in") else ""
        return f"  [{r['key']}] {r['role']:<7} {r['file']}:{r['line']}  {what}{where}"

    lines = [row(r) for r in runs[:TEXT_ROWS]]
    if len(runs) > TEXT_ROWS:
        lines.append(f"  … {len(runs) - TEXT_ROWS} more in the structured content")
    return lines


# ---- kernel, explain_trace --------------------------------------------------------------------
def kernel_answer(ix, name: str, limit: int | None = 50, platform: str | None = None) -> Answer:
    """``atenmap kernel NAME [--platform P] --json``; a name the index does not know is the error the CLI prints."""
    from atenmap.cli.chain_run import check_platform
    from atenmap.resolve.kernelplatform import for_platform
    from atenmap.views.kernel import kernels_json

    platform = check_platform(platform)
    if not name.strip():
        raise AtenmapError("give a kernel name as a profiler prints it")
    m = for_platform(ix.store, ix.kernel(name), platform)
    if not m.found:
        raise AtenmapError(m.notes[0])  # resolve/versions.unknown_kernel: names the tree's version
    data = kernels_json([m], single=True)
    cut = _limit(limit)
    total = len(data["operators"])
    data["operators"] = data["operators"][:cut]
    data["operators_total"] = total
    lines = [f"{m.kind} {m.qualname or m.function or m.query[:120]}" + (f" ({m.library})" if m.library else "")]
    if m.definition is not None:
        lines.append(f"defined: {m.definition.file}:{m.definition.line}  {m.definition.symbol}")
    lines += [f"launched: {s.file}:{s.line}  {s.symbol}" for s in m.launches[:TEXT_ROWS]]
    lines += [f"functor: {s.file}:{s.line}  {s.symbol}" for s in m.functors[:TEXT_ROWS]]
    lines += [f"library call: {s.file}:{s.line}  {s.symbol}" for s in m.library_calls[:TEXT_ROWS]]
    ops = [f"{o['op']} [{o['key']}]" for o in data["operators"][:TEXT_ROWS]]
    lines.append(f"operators reaching it, most likely first ({_count(len(ops), total, 'operators')}): {', '.join(ops)}"
                 if total else "no operator found reaching it")
    lines += [f"note: {n}" for n in m.notes]
    return _answer(data, lines)


def trace_kernels(ix, path: str, platform: str | None = None):
    """Every device event of a chrome trace joined as ``atenmap kernel --from-trace`` joins it
    (trace/fromtrace.py): a TraceAnswer, whose notes say what the trace lacks; ``platform`` as
    ``--platform`` (resolve/kernelplatform.py)."""
    from atenmap.cli.chain_run import check_platform
    from atenmap.trace.fromtrace import answer

    platform = check_platform(platform)
    ans = answer(ix, path, platform=platform)  # Note [A trace of another platform] in trace/join.py
    if not ans.kernels:
        raise AtenmapError(f"{path}: no GPU kernel, memcpy or memset events in this trace")
    return ans


def trace_answer(ix, path: str, limit: int | None = 50, platform: str | None = None) -> Answer:
    """``atenmap kernel --from-trace PATH [--platform P] --json`` (kernels in the trace's order of first
    appearance, as the CLI lists them) cut to ``limit``, in an object with the totals and the trace's notes."""
    from atenmap.trace.fromtrace import trace_kernels_json

    ans = trace_kernels(ix, path, platform)
    every = trace_kernels_json(ans)
    shown = every[:_limit(limit)]
    found = sum(1 for k in ans.kernels if k.match is not None and k.match.found)
    data = {"trace": str(path), "total": len(every), "found": found, "events": ans.events,
            "notes": list(ans.notes), "kernels": shown}
    lines = [f"{path}: {data['events']:,} kernel events, {len(every):,} distinct kernels, {found:,} found in the index; "
             + _count(len(shown), len(every), "kernels")]
    lines += [f"note: {n}" for n in ans.notes]
    for d in shown[:TEXT_ROWS]:
        where = d.get("definition") or (d.get("launches") or [None])[0]
        place = f"{where['file']}:{where['line']}" if where else (d.get("library") or "not found")
        ops = ", ".join(d.get("trace_operators") or {}) or ", ".join(o["op"] for o in d.get("operators", [])[:3])
        lines.append(f"  {d.get('count', 0):>5}x {(d.get('function') or d.get('query') or '')[:80]}  {place}  [{ops}]")
    return _answer(data, lines)


# ---- where, search, ops -----------------------------------------------------------------------
def where_answer(ix, file: str, line: int | None = None, function: str | None = None,
                 limit: int | None = 50) -> Answer:
    """``atenmap where FILE:LINE --json`` (or ``FILE FUNCTION``)."""
    if line is None and not function:
        raise AtenmapError(f"{file!r}: give a line or a function")
    w = ix.where(file, line=line, function=function)
    d = w.to_dict()
    total = len(d["operators"])
    d["operators"] = d["operators"][:_limit(limit)]
    data = {**d, "total": total}
    ops = d["operators"][:TEXT_ROWS]
    text = [f"{w.loc.file}:{w.loc.line}  {w.function}  (lines {w.loc.line}-{w.end_line})",
            f"operators reaching it, nearest first ({_count(len(ops), total, 'operators')}): {', '.join(ops)}"
            if total else "no operator reaches it through the indexed call graph"]
    return _answer(data, text)


def search_answer(ix, pattern: str, key: str | None = None, limit: int | None = 50) -> Answer:
    """``atenmap search PATTERN [--key K] --json``."""
    found = ix.search(pattern, key=key)
    hits = found[:_limit(limit)]
    data = {"pattern": pattern, "total": len(found), "hits": [h.to_dict() for h in hits]}
    lines = [f"{pattern!r}: {_count(len(hits), len(found), 'hits')}" if found else f"nothing matches {pattern!r}"]
    lines += [f"  {h.kind:<8} {h.name}  {h.file}:{h.line}" for h in hits[:TEXT_ROWS]]
    return _answer(data, lines)


def compile_answer(ix, op: str, key: str | list[str] | None = None) -> Answer:
    """``atenmap OP --compile --json``'s ``compile`` part: what torch.compile's Inductor does with the
    op (decomposition, lowering, fallback with its ATen chain, fx passes), read from the tree's Python."""
    from atenmap.views import links
    from atenmap.views.compile import compile_list

    keys = [k.strip() for k in key.split(",") if k.strip()] if isinstance(key, str) else key
    found = ix.lookup(op)
    comp = ix.compile(found.operator, keys=keys or None)
    chain_like = ix.chain(found.operator, keys=keys or None, runs=False)
    loc = links.linker(chain_like, None)
    steps = compile_list(comp, link=loc)
    data = {"op": comp.op, "summary": comp.summary, "note": comp.note, "compile": steps}
    lines = [f"{comp.op}: {comp.summary or comp.note or 'no torch.compile facts'}"]
    lines += [f"  {s['role']:<13} {s['file']}:{s['line']}  {s['symbol']}" for s in steps[:TEXT_ROWS]]
    if len(steps) > TEXT_ROWS:
        lines.append(f"  … {len(steps) - TEXT_ROWS} more in the structured content")
    return _answer(data, lines)


def ops_answer(ix, key: str | None = None, limit: int | None = 50, missing: bool = False) -> Answer:
    """``atenmap ops [--key K] --limit N --json``, as an object: ``operators`` is the CLI's list; with
    ``missing``, ``atenmap ops --key K --missing --json`` (views/missing.py's object)."""
    if missing:
        return _missing_answer(ix, key, limit)
    ops = ix.ops(key)
    shown = ops[:_limit(limit)]
    data = {"key": key, "total": len(ops), "operators": [o.to_dict() for o in shown]}
    lines = [_count(len(shown), len(ops), "operators") + (f" with a kernel for {key}" if key else "")]
    lines += [f"  {o.op.name}  {o.op.kind}  " + ", ".join(f"{r.key}: {r}" for r in o.runs)[:160]
              for o in shown[:TEXT_ROWS]]
    return _answer(data, lines)


def _missing_answer(ix, key: str | None, limit: int | None) -> Answer:
    """What ``key`` lacks (docs/devices.md), grouped as ``atenmap ops --key K --missing`` groups it."""
    from atenmap.errors import UsageError
    from atenmap.views.missing import group_counts, grouped, missing_json

    if not key:
        raise UsageError("missing needs a key: the key whose missing kernels to list (e.g. MPS)")
    found = ix.missing(key)
    key = ix.known_key(key)
    ordered = [x for _, members in grouped(found) for x in members]
    shown = ordered[:_limit(limit)]
    counts = group_counts(found)
    data = json.loads(missing_json(shown, key, len(found), counts))
    lines = [f"{key}: {len(found)} operators with no {key} kernel of their own ("
             + ", ".join(f"{g} {n}" for g, n in counts.items()) + "); " + _count(len(shown), len(found), "operators")]
    lines += [f"  {x.op}  {x.outcome}" for x in shown[:TEXT_ROWS]]
    return _answer(data, lines)
