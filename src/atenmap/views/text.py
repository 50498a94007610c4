"""Text and JSON views of result records. Knows nothing of SQLite or typer."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Optional
from urllib.parse import quote

from atenmap import devices
from atenmap.model import Chain, Reason, Role, Run, Step
from atenmap.views.links import detail as _detail
from atenmap.views.terminal import Line, Span, Terminal, fold_prefix, hang, plain, shorten_middle, tree_levels, wrap_words

if TYPE_CHECKING:
    from atenmap.model_answers import OperatorKernels

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


GENERATED = "<torchgen>"  # the bundled index's placeholder for torchgen's output folder
GEN = "gen:"  # what text views print for torchgen's output folder (Note [Generated paths in text])
PARTS = ("runs", "tree")  # what chain_lines shows: the runs block, the tree, or both
RUNS_SHOWN = 8  # runs listed per key when the tree follows (--runs lists all)
RUN_ROLE_WIDTH = 7  # launch, jit, library, kernel
# the bundled index keeps the default call's ranking (Note [The runs the bundle keeps] in resolve/runs.py)
UNAPPLIED = ("for your call: {} -- not applied: the bundled index keeps the runs ranked for a call with the "
             "defaults (--source or atenmap fetch decides them for yours)")
UNDECIDED = "not decided by the given arguments"  # a run whose conditions a call's facts could not decide

# Note [Generated paths in text]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# torchgen's output lives in atenmap's cache under a folder named by the hash of its inputs
# (~/.cache/atenmap/codegen/codegen-<64 hex>/aten/RegisterCUDA.cpp): 100+ characters before the
# file name. Text views print it as ``gen:aten/RegisterCUDA.cpp:43573`` and say once, in the
# header, what ``gen:`` stands for; ``atenmap show gen:aten/RegisterCUDA.cpp:43573`` prints the
# lines there. Machine-read outputs (--json, lines, open, gdb) keep the real absolute paths. The
# bundled index, which has no such folder, stores ``<torchgen>/...``; it prints as ``gen:`` too.


def short_generated(text: str, generated_root: str | None) -> str:
    """``text`` with torchgen's output folder (and the bundle's ``<torchgen>``) written ``gen:``.
    See Note [Generated paths in text]."""
    if generated_root and generated_root != GENERATED:
        text = text.replace(generated_root.rstrip("/") + "/", GEN)
    return text.replace(GENERATED + "/", GEN)


def _loc(step: Step, generated_root: str | None = None, link: Link = None) -> str:
    """A step's location text: ``link``'s when it has one, else ``path:line`` (generated files as
    ``gen:PATH``)."""
    if step.file is None:
        return "(generated)"
    return (link and link(step)) or short_generated(f"{step.file}:{step.line}", generated_root)


def chain_lines(chain: Chain, link: Link = None, more_keys: tuple[str, ...] | list[str] = (),
                term: Terminal | None = None, urls: Link = None, parts: tuple[str, ...] = PARTS) -> list[str]:
    """Readable text, ``path:line`` first on each line so terminals and editors can jump: per key,
    what runs (``parts`` has "runs"; Note [What runs, first] in resolve/runs.py), then the tree of
    steps (``parts`` has "tree"). ``more_keys``: keys the chain leaves out, named in one line at
    the end; ``term``: width, colour and hyperlinks (Note [Terminal output]; default: whole plain
    lines); ``urls``: a Linker (links.py) whose permalinks or local paths become the locations'
    OSC-8 link targets (shown only where ``term.links``)."""
    term = term or Terminal()
    return term.lines(chain_spans(chain, link=link, more_keys=more_keys, width=term.width, urls=urls, parts=parts))


def _header(chain: Chain, width: int | None) -> list[Line]:
    op, src, gen = chain.op, chain.source, chain.generated_root
    out: list[Line] = [(Span(f"{op.name}", "heading"), Span(f": {op.schema}")),
                       (Span(f"source: {src.root} (PyTorch {src.version}{', ' + src.commit[:12] if src.commit else ''})"),)]
    if gen == GENERATED:  # the bundled index: no torchgen output on this machine
        text = f"{GEN} = files torchgen writes at build time, not in the repository (steps marked [generated])"
    elif gen:
        text = f"{GEN} = {gen.rstrip('/')}/ (the checkout's torchgen output; steps marked [generated])"
    else:
        return out
    return out + [(Span(t, "dim"),) for t in wrap_words(text, width, " " * (len(GEN) + 3))]


def chain_spans(chain: Chain, link: Link = None, more_keys=(), width: int | None = None,
                urls: Link = None, parts: tuple[str, ...] = PARTS) -> list[Line]:
    out = _header(chain, width)
    gen = chain.generated_root
    steps = [s for kc in chain.keys for s in kc.walk()] + [s for b in chain.bindings for s in b.walk()]
    loc_width = max((len(_loc(s, gen, link)) for s in steps), default=0)
    if width is not None:
        loc_width = min(loc_width, max(20, width * (3 if width < 100 else 4) // 10))  # narrow: room for the tree
    ctx = _Ctx(loc_width, link, urls, width, gen)
    tree = "tree" in parts
    if tree and chain.bindings and "runs" not in parts:
        _python(chain, out, ctx)
    for kc in chain.keys:
        out.append(())
        out.append((Span(f"[{kc.key}]", "heading"),))
        if "runs" in parts:
            own = chain.runs_of(kc.key)
            device = {r.key for r in chain.runs} - {k.key for k in chain.keys} if not own else set()
            if device:  # Note [A composite's runs are its operators'] (resolve/runs.py)
                out.append((Span(f"what it runs on {', '.join(sorted(device))}, through the operators it calls "
                                 f"(atenmap OP --key {min(device)} shows the way):", "dim"),))
                own = tuple(r for r in chain.runs if r.key in device)
            _runs(own, out, ctx, RUNS_SHOWN if tree else None, chain.given, chain.unapplied)
        if tree:
            if "runs" in parts:
                out.append((Span("the way there:", "dim"),))
            for step in kc.steps:
                _tree(step, "", True, out, ctx, top=True)
    if tree and chain.bindings and "runs" in parts:
        _python(chain, out, ctx)
    rest = list(more_keys)
    if rest:
        out.append(())
        out.append((Span(f"+{len(rest)} more key{'s' if len(rest) > 1 else ''}: {', '.join(rest)} (--key all shows them)",
                         "dim"),))
    return out


def _python(chain: Chain, out: list[Line], ctx: "_Ctx") -> None:
    out.append(())
    out.append((Span("[Python]", "heading"),))
    for step in chain.bindings:
        _tree(step, "", True, out, ctx, top=True)


def _runs(runs: tuple[Run, ...], out: list[Line], ctx: "_Ctx", shown: int | None, given: tuple[str, ...] = (),
          unapplied: tuple[str, ...] = ()) -> None:
    """The runs block of one key: ``path:line  role  name  (via op)`` and a ``when:`` line; with a
    call's facts (``given``), the line that names them and, on a run they could not decide, a mark;
    facts the runs were not decided with (``unapplied``: the bundled index), the line that says so."""
    if given:
        out.append((Span("for your call: " + " · ".join(given), "dim"),))
    if unapplied:
        out.append((Span(UNAPPLIED.format(" · ".join(unapplied)), "dim"),))
    if not runs:
        none = "runs: no launch, jit kernel or library call found"
        out.append((Span(none + (" that this call can take" if given else " (the tree shows the way)"), "dim"),))
        return
    out.append((Span(f"runs ({len(runs)}, main path first):", "dim"),))
    for r in runs[:shown]:
        step = Step(r.role, r.name, r.loc, generated=r.generated)  # for the location and its link
        loc = shorten_middle(_loc(step, ctx.gen, ctx.link), ctx.loc_width)
        url = _url(ctx.urls, step) if ctx.urls and r.file else None
        head = [Span(loc, "", url), Span(" " * (ctx.loc_width - len(loc)) + "  "),
                Span(f"{r.role:<{RUN_ROLE_WIDTH}}", f"role.{r.role}"), Span("  ")]
        via = f"  (via {r.via[-1].removeprefix('aten::')})" if r.via else ""
        indent = len(plain(head))
        if ctx.width is None or indent + len(r.name) <= ctx.width:
            out.append((*head, Span(r.name, "heading"), Span(via, "dim")))
        else:
            out.append(tuple(head))
            out += [(Span(t, "heading"),) for t in hang(r.name, indent, ctx.width)]
            if via:
                out.append((Span(" " * indent + via.strip(), "dim"),))
        when = " · ".join(_reason_text(w) for w in r.when)
        if r.decided == "undecided":
            when = (when + " · " if when else "") + UNDECIDED
        if when:
            out.append((Span(" " * (ctx.loc_width + 4) + "when: " + when, "dim"),))
    if shown is not None and len(runs) > shown:
        out.append((Span(f"… {len(runs) - shown} more (atenmap OP --runs lists them; all are in the tree below)", "dim"),))


def _reason_text(r: Reason) -> str:
    return f"{r.kind} {r.text}" if r.kind in ("#if", "dtypes") else r.text


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
    gen: str | None = None  # the chain's generated_root, printed gen:

    @property
    def levels(self) -> int | None:
        """Tree levels shown before the depth is folded into a number (See terminal.fold_prefix)."""
        return tree_levels(self.width, self.loc_width + 2 + 3 + ROLE_WIDTH + 1)


def _tree(step: Step, prefix: str, last: bool, out: list[Line], ctx: _Ctx, top: bool = False, depth: int = 0) -> None:
    branch = "" if top else ("└─ " if last else "├─ ")
    text = short_generated(_detail(step, ctx.link or ctx.urls), ctx.gen)
    loc = shorten_middle(_loc(step, ctx.gen, ctx.link), ctx.loc_width)
    url = _url(ctx.urls, step) if ctx.urls and step.file else None
    shown = fold_prefix(prefix, depth, ctx.levels)
    head = (Span(loc, "", url), Span(" " * (ctx.loc_width - len(loc)) + f"  {shown}{branch}"),
            Span(f"{step.role:<{ROLE_WIDTH}}", f"role.{step.role}"))
    rest = [Span(f" {step.symbol}")]
    if step.generated:
        rest.append(Span(" [generated]", "generated"))
    if text:
        rest.append(Span(f"  — {text}", "dim"))
    child_prefix = prefix if top else prefix + ("   " if last else "│  ")
    name = step.symbol.split("<<<", 1)[0] if step.role == Role.LAUNCH else step.symbol
    if step.role.runs_on_device and ctx.width is not None and len(plain(head)) + 1 + len(name) > ctx.width:
        out.append(head)  # the name whole on the next line(s), then what follows it, cut to the width
        cont = " " * ctx.loc_width + "  " + fold_prefix(child_prefix, depth + 1, ctx.levels) + "   "
        lines = hang(name, len(cont), ctx.width)
        out += [(Span(t),) for t in lines[:-1]]
        out.append((Span(lines[-1]), Span(step.symbol[len(name):]), *rest[1:]))
    else:
        out.append((*head, *rest))
    for r in step.why:
        out.append(_why_line(r, " " * ctx.loc_width + "  " + fold_prefix(child_prefix, depth + 1, ctx.levels)
                             + ("│  " if step.children else "   "), ctx))
    for i, c in enumerate(step.children):
        _tree(c, child_prefix, i == len(step.children) - 1, out, ctx, depth=depth + 1)


def _why_line(reason: Reason, lead: str, ctx: _Ctx) -> Line:
    """``why: if (contiguous)  CUDALoops.cuh:308`` (--why), dim, its text cut so the place fits."""
    where = f"{reason.loc.file.rsplit('/', 1)[-1]}:{reason.loc.line}" if reason.loc else ""
    text = _reason_text(reason)
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
