"""Text and JSON views of result records. Knows nothing of SQLite or typer."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Callable, Optional
from urllib.parse import quote

from atenmap import devices
from atenmap.model import Chain, OperatorKernels, Reason, Step
from atenmap.views.links import detail as _detail
from atenmap.views.terminal import Line, Span, Terminal, shorten_middle

ROLE_WIDTH = 12

# A step's location text (a permalink, an absolute path), or None for the default; see links.py.
Link = Optional[Callable[[Step], Optional[str]]]


def chain_json(chain: Chain, link: Link = None) -> str:
    """``link``: each step also gets ``"link"`` (its URL or absolute path, or null)."""
    d = chain.to_dict()
    if link is not None:
        pairs = list(zip(chain.bindings, d["python"]))
        pairs += [(s, sd) for kc, kd in zip(chain.keys, d["keys"]) for s, sd in zip(kc.steps, kd["steps"])]
        while pairs:
            step, sd = pairs.pop()
            sd["link"] = link(step)
            sd["detail"] = _detail(step, link)
            pairs += list(zip(step.children, sd["children"]))
    return json.dumps(d, indent=2)


GENERATED = "<torchgen>"


def short_generated(text: str, generated_root: str | None) -> str:
    """``text`` with torchgen's output directory written as ``<torchgen>``."""
    return text.replace(generated_root.rstrip("/"), GENERATED) if generated_root else text


def _loc(step: Step, generated_root: str | None = None, link: Link = None) -> str:
    """A step's location text: ``link``'s when it has one, else ``path:line`` (generated files by
    their absolute path in the cache; ``<torchgen>/...`` only for the bundled index, which has none)."""
    if step.file is None:
        return "(generated)"
    return (link and link(step)) or f"{step.file}:{step.line}"


def chain_lines(chain: Chain, link: Link = None, more_keys: tuple[str, ...] | list[str] = (),
                term: Terminal | None = None, urls: Link = None) -> list[str]:
    """Readable tree, one step a line, ``path:line`` first so terminals and editors can jump.
    ``more_keys``: keys the chain leaves out, named in one line at the end; ``term``: width, colour and hyperlinks (Note [Terminal output]; default: whole plain
    lines); ``urls``: a Linker (links.py) whose permalinks or local paths become the locations' OSC-8
    link targets (shown only where ``term.links``)."""
    term = term or Terminal()
    return term.lines(chain_spans(chain, link=link, more_keys=more_keys, width=term.width, urls=urls))


def chain_spans(chain: Chain, link: Link = None, more_keys=(), width: int | None = None,
                urls: Link = None) -> list[Line]:
    op = chain.op
    src = chain.source
    out: list[Line] = [(Span(f"{op.name}", "heading"), Span(f": {op.schema}")),
                       (Span(f"source: {src.root} (PyTorch {src.version}{', ' + src.commit[:12] if src.commit else ''})"),)]
    gen = chain.generated_root
    if gen == GENERATED:  # the bundled index: no torchgen output on this machine
        out.append((Span(f"{GENERATED} = files torchgen writes at build time, not in the repository "
                         "(steps marked [generated])"),))
    elif gen:
        out.append((Span(f"generated: {gen} (the checkout's torchgen output; steps marked [generated])"),))
    shown = list(chain.keys)
    steps = [s for kc in shown for s in kc.walk()] + [s for b in chain.bindings for s in b.walk()]
    loc_width = max((len(_loc(s, gen, link)) for s in steps), default=0)
    if width is not None:
        loc_width = min(loc_width, max(24, width * 2 // 5))
    ctx = _Ctx(loc_width, link, urls, width)
    if chain.bindings:
        out.append(())
        out.append((Span("[Python]", "heading"),))
        for step in chain.bindings:
            _tree(step, "", True, out, ctx, top=True)
    for kc in shown:
        out.append(())
        out.append((Span(f"[{kc.key}]", "heading"),))
        for step in kc.steps:
            _tree(step, "", True, out, ctx, top=True)
    rest = list(more_keys)
    if rest:
        out.append(())
        out.append((Span(f"+{len(rest)} more key{'s' if len(rest) > 1 else ''}: {', '.join(rest)} (--key all shows them)",
                         "dim"),))
    return out


def _url(link: Link, step: Step) -> str | None:
    """An OSC-8 target for a step: its permalink, or its local file as a ``file://`` URL."""
    text = link(step)
    if text is None or text.startswith("https://"):
        return text
    return "file://" + quote(text.rpartition(":")[0])


@dataclass(frozen=True)
class _Ctx:
    loc_width: int
    link: Link
    urls: Link
    width: int | None = None


def _tree(step: Step, prefix: str, last: bool, out: list[Line], ctx: _Ctx, top: bool = False) -> None:
    branch = "" if top else ("└─ " if last else "├─ ")
    text = _detail(step, ctx.link or ctx.urls)
    loc = shorten_middle(_loc(step, None, ctx.link), ctx.loc_width)
    url = _url(ctx.urls, step) if ctx.urls and step.file else None
    line = [Span(loc, "", url), Span(" " * (ctx.loc_width - len(loc)) + f"  {prefix}{branch}"),
            Span(f"{step.role:<{ROLE_WIDTH}}", f"role.{step.role}"), Span(f" {step.symbol}")]
    if step.generated:
        line.append(Span(" [generated]", "generated"))
    if text:
        line.append(Span(f"  — {text}", "dim"))
    out.append(tuple(line))
    child_prefix = prefix if top else prefix + ("   " if last else "│  ")
    for r in step.why:
        out.append(_why_line(r, " " * ctx.loc_width + "  " + child_prefix + ("│  " if step.children else "   "), ctx))
    for i, c in enumerate(step.children):
        _tree(c, child_prefix, i == len(step.children) - 1, out, ctx)


def _why_line(reason: Reason, lead: str, ctx: _Ctx) -> Line:
    """``why: if (contiguous)  CUDALoops.cuh:308`` (--why), dim, its text cut so the place fits."""
    where = f"{reason.loc.file.rsplit('/', 1)[-1]}:{reason.loc.line}" if reason.loc else ""
    text = reason.text if reason.kind not in ("#if", "dtypes") else f"{reason.kind} {reason.text}"
    if ctx.width is not None:
        room = max(12, ctx.width - len(lead) - len("why: ") - 2 - len(where))
        if len(text) > room:
            text = text[: room - 1] + "…"
    url = _url(ctx.urls, Step.make("call", "", reason.loc.file, reason.loc.line)) if ctx.urls and reason.loc else None
    return (Span(lead), Span(f"why: {text}", "dim"), Span("  "), Span(where, "dim", url))


def ops_lines(ops: list[OperatorKernels], term: Terminal | None = None) -> list[str]:
    """``yaml:line  name  [kind]  CPU: kernel, CUDA: kernel, ...`` per operator, CPU and CUDA first."""
    term = term or Terminal()
    out = []
    for o in ops:
        runs = sorted(o.runs, key=lambda r: devices.key_sort(r.key))
        line = [Span(str(o.op.loc)), Span("  "), Span(str(o.op.name), "heading"), Span(f"  [{o.op.kind}]  ", "dim")]
        for i, r in enumerate(runs):
            line += [Span(", " if i else ""), Span(f"{r.key}", f"role.{'kernel' if r.key in devices.COMMON_KEYS else 'native'}"),
                     Span(f": {r}")]
        out.append(tuple(line))
    return term.lines(out)
