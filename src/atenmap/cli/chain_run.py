"""`atenmap chain`'s work once its options are parsed, without typer: the typer command (chain.py)
and the typer-free `atenmap OP` (quick.py) both end here, so they print the same."""
from __future__ import annotations

from typing import Optional

from atenmap.errors import UsageError
from atenmap.cli.plain import check_keys, echo, linker, lookup_note, open_index, output_format, status_line, terminal, warn


def show_chain(op: str, key: Optional[list[str]], depth: int, no_expand: bool, source: Optional[str],
               no_codegen: bool, codegen: Optional[str], as_json: bool, fmt: str, link: Optional[str],
               wide: bool, why: bool = False, backward: bool = False, tree: bool = False, runs: bool = False,
               compile_: bool = False, _ix=None, _preview: bool = True, _preview_of=None,
               _loaded=None, dtype: Optional[str] = None, shape: Optional[str] = None,
               example: Optional[str] = None, _facts=None, platform: str = "cuda") -> None:
    from atenmap.views import text as render

    fmt = output_format(fmt, as_json)
    platform = check_platform(platform)
    facts = _facts if _facts is not None else call_facts(op, dtype, shape, example)
    if tree and runs:
        raise UsageError("--tree and --runs each show one part of the text; without either, both are shown")
    parts = ("tree",) if tree else ("runs",) if runs else render.PARTS
    later = False
    if _ix is None and fmt == "text" and not no_codegen:
        later, codegen = _torchgen_first(source, codegen)  # codegen: decided, when asked here
    shown = False
    if _preview and _ix is None and fmt == "text" and not backward and not compile_:
        shown = _preview_first(op, key, depth, no_expand, source, fmt, link, wide, why, tree, runs, later, facts,
                               platform)
    if later and not shown:  # after a preview, the complete answer next: not a third printing of the chain
        _hand_written_first(op, key, depth, no_expand, source, as_json, fmt, link, wide, why, backward, tree, runs,
                            compile_, facts, platform)
    build_after = False
    if _loaded is None and _ix is None and not backward and not compile_:
        _loaded = _complete_first(source, op, key, depth, no_expand, no_codegen, codegen, why, facts, platform)
        build_after = _loaded is not None
    chain, more_keys, bwd, python, comp = _loaded or _load(source, op, key, no_codegen, depth, codegen,
                                                           expand=not no_expand, why=why, backward=backward,
                                                           compile_=compile_, ix=_ix, facts=facts, platform=platform)
    loc = linker(chain, link)
    if _preview_of is None:
        for w in chain.warnings + (bwd.warnings if bwd else ()):
            warn(w)
    elif _preview_of != "whole":  # Note [What a preview leaves out]
        parts = ("tree",)
    if comp is not None and comp.note:
        warn(comp.note)
    if fmt == "json" and (bwd is not None or python is not None or comp is not None):
        import json

        from atenmap.views.backward import backward_dict

        d = json.loads(render.chain_json(chain, link=loc))
        if python is not None:
            d["python_function"] = python.to_dict()
        if bwd is not None:
            d["backward"] = backward_dict(bwd, link=loc)
        if comp is not None:
            from atenmap.views.compile import compile_list

            d["compile"] = compile_list(comp, link=loc)
        echo(json.dumps(d, indent=2))
    elif fmt == "json":
        echo(render.chain_json(chain, link=loc))
    elif fmt == "lines":
        from atenmap.views.editor import render_lines

        echo("\n".join(render_lines(chain, absolute=getattr(loc, "mode", None) == "local")))
    else:
        # The bundled index prints path:line linking to the permalink (--link github prints the URL).
        shown, urls = loc, None
        if link is None and getattr(loc, "mode", None) == "github":
            shown, urls = None, loc
        term = terminal(wide)
        if python is not None:
            from atenmap.views.python import python_lines

            echo("\n".join(python_lines(python, str(chain.op.name), term.width)))
        if urls is None and term.links and chain.source.origin != "bundled":
            from atenmap.views.links import linker as make_linker

            urls = make_linker(chain, "local")
        echo("\n".join(render.chain_lines(chain, link=shown, more_keys=more_keys, term=term, urls=urls,
                                             parts=parts)))
        if bwd is not None:
            from atenmap.views.backward import backward_lines

            echo("\n".join(backward_lines(bwd, link=shown, term=term, urls=urls, generated_root=chain.generated_root)))
        if comp is not None and comp.steps:
            from atenmap.views.compile import compile_lines

            echo("\n".join(compile_lines(comp, link=shown, term=term, urls=urls)))
    if build_after:
        _build_after_answer(source, no_codegen, codegen)


def _complete_first(source, op, key, depth, no_expand, no_codegen, codegen, why, facts, platform):
    """On a tree never indexed, with ``exact_first`` on: ``_load``'s answer from the files the exact
    pre-scan names for each lookup (Note [A complete answer from the candidates] in exactfirst.py),
    or None where it cannot be the full index's (a question it cannot answer exactly, an error the
    full index then reports): the full index answers."""
    import sys

    from atenmap import config

    if not config.exact_first():
        return None
    from atenmap.cli.pager import unpaged  # only now: a warm query loads no pager (tests/test_cli.py)

    if unpaged(sys.stdout) is not sys.stdout:
        return None  # paged (a terminal): the answer would wait in the pager for the build after it; the preview serves
    from atenmap import exactfirst, preview
    from atenmap.cli.plain import codegen_setting
    from atenmap.errors import AtenmapError
    from atenmap.indexstate import codegen_decision
    from atenmap.source.find import find_source

    info = find_source(source, bundled=True)
    if not preview.never_indexed(info):
        return None
    decision = codegen_decision(info, codegen_setting(no_codegen, codegen))
    notes: list[str] = []  # said only when this answer is given
    with exactfirst.first_index(info, decision, status=status_line) as (ix, lazy):
        try:
            loaded = load_chain_for(ix, op, key, depth, expand=not no_expand, why=why, note=notes.append,
                                    facts=facts, platform=platform)
        except AtenmapError:
            return None
    if not lazy.exact:
        return None
    for line in notes:
        status_line(line)
    return (*loaded, None)


def _build_after_answer(source, no_codegen, codegen) -> None:
    """The full index, built once the answer is out (issue 37 item 2): stdout is closed first, so a
    pipe reading the answer ends."""
    import os
    import sys

    sys.stdout.flush()
    if sys.stdout is sys.__stdout__ and not sys.stdout.isatty():  # the process's own stdout, a pipe
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    with open_index(source, no_codegen, codegen):
        pass


# Note [Generated steps later]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# On a tree never indexed, the first answer waits for torchgen (~9-13 s of its generators, then
# the parse of its 44 files, 12.7 MB) unless its output is cached. On a terminal, a text answer
# does not wait: the hand-written index is built first (--no-codegen's: the same tree files, the
# same facts), its answer printed, then one status line says the generated steps are being
# added, and the same index is refreshed with torchgen's output (the tree's files are kept, only
# the generated ones are parsed) and the complete answer printed below, exactly the answer the
# command gives without this (tests/test_chain_generated.py). Without a terminal (a pipe, a
# script, --json, --format lines) the command prints the complete answer only, once: two answers
# in one output would break whatever reads it. The cost, measured in docs/performance.md: the
# first answer comes at the hand-written time, the complete one a few seconds later than today,
# as torchgen no longer runs beside the parse of the tree.
GENERATED_LATER = "generated steps (torchgen) being added; the complete answer follows…"


def _hand_written_first(op, key, depth, no_expand, source, as_json, fmt, link, wide, why, backward, tree, runs,
                        compile_, facts=None, platform: str = "cuda") -> None:
    """The --no-codegen answer, on the terminal now (not in the pager: it shows what comes at
    the end), then the line that says the complete answer follows (Note [Generated steps later])."""
    import sys

    from atenmap.cli.pager import unpaged

    from atenmap.errors import AtenmapError

    paged = sys.stdout
    sys.stdout = unpaged(paged)
    try:
        show_chain(op, key, depth, no_expand, source, True, None, as_json, fmt, link, wide, why, backward, tree,
                   runs, compile_, _preview=False, _facts=facts, platform=platform)
    except AtenmapError:  # no hand-written chain for it (a kernel only torchgen writes): the complete answer says
        return
    finally:
        sys.stdout = paged
    status_line(GENERATED_LATER)


# Note [What a preview leaves out]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A preview's facts are a few files' (Note [Query-driven preview] in preview.py), so what the
# resolver says about what it did not find is about those files, not the tree: "no registration
# of add_stub for cuda in the indexed source (… --no-codegen)" on add.out, whose CUDA kernel
# torchgen's UfuncCUDA_add.cu registers, blamed an option nobody passed. A preview therefore
# prints no warnings (the complete answer prints its own), and when it knows it is not whole (a
# warning, or a name it could not follow) it shows the tree without the runs block: "runs (1,
# main path first)" would name a main path the complete answer does not (add.out's ufunc::add
# where the complete answer's first run is the vectorized_elementwise_kernel launch). `--runs`
# alone then gets no preview. The status line comes first, so the block below it is labelled
# before it is read, and after a preview the complete answer is the next chain printed: the
# hand-written one of Note [Generated steps later] would print the same chain a second time.
PREVIEW_FIRST = "a preview from {n} of the tree's {total} files{left}; the complete answer follows{gen}…"
PREVIEW_LEFT = " ({k} name{s} it could not follow; the runs come with the complete answer)"
PREVIEW_PARTIAL = " (not whole; the runs come with the complete answer)"
PREVIEW_GENERATED = ", with torchgen's generated steps"


def _preview_first(op, key, depth, no_expand, source, fmt, link, wide, why, tree, runs, later=False,
                   facts=None, platform: str = "cuda") -> bool:
    """On a terminal, for a tree never indexed: one line saying what follows, then the chain from
    the few files it needs (Note [Query-driven preview] in preview.py, Note [What a preview leaves
    out]). False when there is no preview to give (the complete answer then says what is wrong)."""
    import sys

    from atenmap import config

    if not sys.stdout.isatty() or not config.preview():
        return False
    from atenmap import preview
    from atenmap.cli.pager import unpaged
    from atenmap.errors import AtenmapError
    from atenmap.source.find import find_source

    info = find_source(source, bundled=True)
    if not preview.never_indexed(info):
        return False
    with preview.partial_index(info, op, key, depth) as got:
        if got is None:
            return False
        ix, closure = got
        try:
            loaded = _load(source, op, key, True, depth, expand=not no_expand, why=why, ix=ix, facts=facts,
                           platform=platform)
        except AtenmapError:  # no chain from these files (a key they lack): the complete answer says
            return False
        whole = not loaded[0].warnings and not closure.unfollowed
        if runs and not whole:
            return False
        k = len(closure.unfollowed)
        left = PREVIEW_LEFT.format(k=k, s="" if k == 1 else "s") if k else "" if whole else PREVIEW_PARTIAL
        status_line(PREVIEW_FIRST.format(n=len(closure.files), total=closure.total, left=left,
                                         gen=PREVIEW_GENERATED if later else ""))
        paged = sys.stdout
        sys.stdout = unpaged(paged)
        try:
            show_chain(op, key, depth, no_expand, source, True, None, False, fmt, link, wide, why, tree=tree,
                       runs=runs, _ix=ix, _preview_of="whole" if whole else "partial", _loaded=loaded, _facts=facts,
                       platform=platform)
        finally:
            sys.stdout = paged
    return True


def check_platform(platform: Optional[str]) -> str:
    """``--platform`` as given (any case), or UsageError naming the platforms (Note [The ROCm side of
    #if] in resolve/conditions.py)."""
    from atenmap.resolve.conditions import PLATFORMS

    wanted = (platform or PLATFORMS[0]).strip().lower()
    if wanted not in PLATFORMS:
        raise UsageError(f"--platform {platform}: no such platform; platforms: {', '.join(PLATFORMS)}")
    return wanted


def call_facts(op: str, dtype: Optional[str], shape: Optional[str], example: Optional[str]):
    """The call ``--dtype``/``--shape``/``--example`` describe (resolve/callfacts.py), or None."""
    from atenmap.resolve.callfacts import facts_from_options

    return facts_from_options(dtype, shape, example)


def _check_example(ix, op: str, found, facts) -> None:
    """An example must call the operator asked about (``torch.mm(...)`` for ``mm``, ``F.relu`` for
    ``relu``): the name it calls is looked up as ``atenmap NAME`` would look it up."""
    from atenmap.errors import AtenmapError

    if facts is None or facts.call is None:
        return
    try:
        called = ix.lookup(facts.call)
    except AtenmapError:
        raise UsageError(f"--example: {facts.call} names no torch operator this tree knows") from None
    reached, python = called.operator, called.python
    if python is not None and any(c.operator.split(".")[0] == found.operator.name.name for c in python.calls):
        return  # a Python function that can reach it (torch.norm for norm): the path decides (load_chain_for)
    if reached.name.name != found.operator.name.name:
        raise UsageError(f"--example calls {facts.call} (operator {reached.name}), not {op}")


def _torchgen_first(source, codegen):
    """Whether to print the hand-written answer before the complete one (Note [Generated steps later]),
    and the codegen setting to open the index with: the decision made here when one was (so that
    ``--codegen ask`` asks once), else ``codegen`` as it came."""
    import sys

    if not sys.stdout.isatty():
        return False, codegen
    from atenmap.indexstate import codegen_decision, torchgen_pending
    from atenmap.cli.plain import codegen_setting
    from atenmap.source.find import find_source

    info = find_source(source, bundled=True)
    if info.origin == "bundled":
        return False, codegen
    decision = codegen_decision(info, codegen_setting(False, codegen))
    return torchgen_pending(info, decision), decision


def _load(source, op: str, key, no_codegen: bool, depth: int, codegen: Optional[str] = None, expand: bool = True,
          why: bool = False, backward: bool = False, compile_: bool = False, ix=None, facts=None,
          platform: str = "cuda"):
    """``load_chain_for``'s answer and, with ``compile_``, the op's ``Index.compile`` (docs/compile.md);
    from ``ix`` when given (the preview's, left open), else from the index of ``source``."""
    from contextlib import nullcontext

    with (nullcontext(ix) if ix is not None else open_index(source, no_codegen, codegen, compile_facts=compile_)) as ix:
        loaded = load_chain_for(ix, op, key, depth, expand=expand, why=why, backward=backward, note=status_line,
                                facts=facts, platform=platform)
        comp = None
        if compile_:
            keys = [k.key for k in loaded[0].keys] or None
            comp = ix.compile(loaded[0].op, keys=keys, depth=depth)
    return (*loaded, comp)


def load_chain_for(ix, op: str, key, depth: int, expand: bool = True, why: bool = False, backward: bool = False,
                   note=status_line, facts=None, platform: str = "cuda"):
    """The chain for ``--key`` (``all``: every key; none: devices.common_keys), the keys left out,
    and with ``backward`` the op's Backward for the chain's device keys (CPU and CUDA if none), from
    an open Index (the MCP server keeps one open). ``note``: where the picked-overload note goes.
    ``facts``: one call's dtype, shapes and aliases (resolve/callfacts.py): the runs it cannot take are left out."""
    from atenmap import devices
    from atenmap.errors import AtenmapError

    found = ix.lookup(op)
    _check_example(ix, op, found, facts)
    if facts is not None and facts.call and (found.picked or "." not in op) and found.python is None:
        reached = ix.lookup_call(facts)  # the signature the call's arguments parse (torch.where(c, x, y))
        if reached.operator.name.name == found.operator.name.name:
            found = reached
        elif reached.python is not None:  # `norm --example 'torch.norm(x)'`: the path the call takes
            note(f"{facts.call} with these arguments returns {reached.operator.name}, not {op}; its chain follows")
            found = reached
    elif facts is not None and facts.call and found.python is not None:
        reached = ix.lookup_call(facts)  # `torch.norm --example 'torch.norm(x)'`: the operator its path returns
        if reached.python is not None:
            found = reached
    if facts is not None and facts.operator and "." in facts.operator:  # the overload the call reaches (out=)
        try:
            reached = ix.lookup(facts.operator)
        except AtenmapError:
            reached = None
        if reached is not None and reached.operator.name.name == found.operator.name.name:
            found = reached
    if found.picked and found.python is None:
        note(lookup_note(found))
    more: list[str] = []
    if key and any(k.lower() == "all" for k in key):
        keys = None
    elif key:
        check_keys(ix, key)
        keys = key
    else:
        every = ix.operator_keys(found.operator)
        keys = devices.common_keys(every) or None
        more = [k for k in every if k not in (keys or ())]
    chain = ix.chain(found.operator, keys=keys, depth=depth, expand=expand, why=why, facts=facts, platform=platform)
    bwd = None
    if backward:
        device_keys = [k.key for k in chain.keys if devices.key_device(k.key) not in ("any",)]
        bwd = ix.backward(found.operator, keys=device_keys or None, expand=expand, depth=depth)
        default = None if facts is not None and facts.call else ix.default_call(found)
        asked_call = default[1] if default is not None else facts
        if asked_call is not None and asked_call.call:  # the node the example's (or default call's) output gets, per device key
            from dataclasses import replace

            asked = [k for k in device_keys if devices.key_device(k) in ("cpu", "cuda")] or ["CPU"]
            answers = {k: ix.output_answer(asked_call, k) for k in asked}
            bwd = replace(bwd, outputs=tuple((k, a.nodes) for k, a in answers.items()),
                          undecided=tuple(k for k, a in answers.items() if a.ranked),
                          output_call=default[0] if default is not None else "")
    if key and keys and not chain.keys:
        raise AtenmapError("; ".join(chain.warnings))
    return chain, more, bwd, found.python
