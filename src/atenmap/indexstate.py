"""What a query asks of an index without building it: where it is (``index_path``), whether it is
fresh (``is_fresh``), whether torchgen's output belongs in it (``codegen_decision``), and its
operator records read back (``operator_from_dict``). Kept out of build.py, which re-exports them,
so that a warm query does not load the build (Note [Start-up budget] in cli/__init__.py); the
full freshness check, run only when the stat proof fails, is fullcheck.py's ``full_check``.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from atenmap import __version__, config
from atenmap.errors import IndexError_
from atenmap.model import Operator, SourceInfo
from atenmap.source.find import YAML_REL, index_dir
from atenmap.store import INDEX_NAME, Store


def index_path(source: SourceInfo) -> Path:
    return index_dir(source) / INDEX_NAME


# Note [Whose code runs]
# ~~~~~~~~~~~~~~~~~~~~~~
# ``codegen`` (build, is_fresh, api.Index.open) is True (follow the settings), False (never: the
# command line's --no-codegen), or the command line's ``--codegen never|ask|always``; else
# ATENMAP_CODEGEN, else config.toml's ``codegen``. With none of them (the default) the tree's
# torchgen runs only for a person at a terminal (stdin and stderr both terminals,
# config.on_terminal), with a notice the first time (codegen.py): a tree of your own, or one
# ``atenmap fetch`` unpacked as you asked by name, whose torchgen is the code you chose, as running
# a build of it would be; without it the answer loses the Python entry points and every generated
# step (docs/codegen.md, "Trust"). Without a terminal -- a script, an agent's shell, ``atenmap
# mcp`` always (its stdin is the protocol, and an agent may open any repository: issue 34, item 1)
# -- nothing runs a tree's code unless the user consented with ``--codegen always``,
# ATENMAP_CODEGEN=always or ``codegen = "always"`` in the config file; torchgen's output already
# cached (made with consent earlier, for these very inputs) is used, since using it runs nothing.
# ``ask`` asks on a terminal, only when torchgen would really run (its output is not cached yet),
# once per process; without a terminal it is never, with a note. ``never`` is --no-codegen: the
# index holds no generated files. Whatever turned it off is recorded in the index's meta
# (``codegen_off``), so that a message names the setting the user made, never a flag they did not
# pass (Store.codegen_absent). The answer is kept by no one: a caller that needs the decision more
# than once (Index.open: is_fresh, then build) decides once and passes the CodegenDecision on, so
# the user is asked once.

NO_CONSENT = ("torchgen not run: no terminal, and running a tree's code without one needs consent "
              "(--codegen always, ATENMAP_CODEGEN=always or codegen = \"always\" in the config file; docs/security.md)")


@dataclass(frozen=True)
class CodegenDecision:
    enabled: bool  # the index includes torchgen's output
    note: str | None = None  # said once and kept as a warning: why not, where the user did not ask for it
    cause: str = ""  # what turned it off, as the user wrote it: --no-codegen, ATENMAP_CODEGEN=never, ...
    may_run: bool = True  # False: only torchgen output already cached is used (no consent: `note`, `cause`)


def codegen_decision(source: SourceInfo, codegen: bool | str | None = True, *,
                     terminal: bool | None = None) -> CodegenDecision:
    """Whether the index includes torchgen's output, and why not; see Note [Whose code runs].
    ``codegen`` may be a decision already made: it is returned as it is. ``terminal``: whether a
    person is there to consent (None: config.on_terminal(); the MCP server passes False)."""
    from atenmap.source.find import cache_dir

    if isinstance(codegen, CodegenDecision):
        return codegen
    if codegen is False:
        return CodegenDecision(False, cause="--no-codegen")
    mode, where = config.codegen_setting(codegen if isinstance(codegen, str) else None)
    root = Path(source.root)
    if mode == "always":
        return CodegenDecision(True)
    if mode == "never":
        return CodegenDecision(False, cause=where)
    if terminal is None:
        terminal = config.on_terminal()
    if mode is None:  # the build looks for cached output only when it builds: a warm query hashes nothing
        return CodegenDecision(True) if terminal else \
            CodegenDecision(True, NO_CONSENT, "no terminal and no consent (the default)", may_run=False)
    from atenmap.extract.codegen import is_cached  # (and subprocess, tempfile...) only for "ask"

    if is_cached(root, cache_dir() / "codegen"):
        return CodegenDecision(True)
    if not terminal:
        return CodegenDecision(False, f"torchgen not run: {where} and no terminal to ask on (treated as never)",
                               f"{where} with no terminal")
    key = str(root.resolve())
    answer = config.confirm(f"run {key}/torchgen (code from that tree) to index what it generates?")
    if answer is None:
        return CodegenDecision(False, f"torchgen not run: {where} and no terminal to ask on (treated as never)",
                               f"{where} with no terminal")
    if answer:
        return CodegenDecision(True)
    return CodegenDecision(False, "torchgen not run: declined at the prompt", "declined at the prompt")


def is_fresh(source: SourceInfo, codegen: bool | str | CodegenDecision | None = True) -> bool:
    """True when an index exists, is compatible, and no file changed; when torchgen's output
    belongs in it (``codegen_decision``), also when that was made from the current torchgen
    inputs. Proven by stat alone when the index's proof still holds, else by the full check
    (which then writes a new proof): see Note [Cheap freshness] in freshness.py."""
    from atenmap import freshness

    decision = codegen_decision(source, codegen)
    path = index_path(source)
    try:
        store = Store.open(path)
    except IndexError_:
        return False
    try:
        meta = store.meta()
        if meta.get("atenmap_version") != __version__:
            return False
        # without consent, an index built without torchgen's output stays as it is (nothing may run to
        # make it); one built with it is kept while its inputs are unchanged (using it runs nothing)
        codegen = decision.enabled and (decision.may_run or meta.get("codegen") == "on")
        if (meta.get("codegen") == "on") != codegen:
            return False
        files = store.files()
        if freshness.proven(path.parent, source.root, meta, files, codegen, YAML_REL):
            return True
        proof = freshness.Proof(source.root, codegen)  # before the full check reads anything
        from atenmap.fullcheck import full_check  # the walk and hashes: only when the proof fails

        if not full_check(source, meta, files, codegen, proof):
            return False
        if meta.get("fresh_token"):
            proof.write(path.parent, meta["fresh_token"])
        return True
    finally:
        store.close()


def compile_facts_made(meta: dict[str, str], origin: str) -> bool:
    """Whether an index with ``meta`` holds its tree's torch.compile facts: the bundled index always
    (built with them, never refreshed); a tree's index when a build made them and stamped what it
    read (``compile_inputs``). See Note [torch.compile facts when asked] in build.py."""
    return origin == "bundled" or "compile_inputs" in meta


def torchgen_pending(source: SourceInfo, codegen: bool | str | CodegenDecision | None = True) -> bool:
    """True when answering from ``source``'s index first means running its torchgen: the index is
    not fresh, torchgen's output belongs in it and is not cached. See Note [Generated steps
    later] in cli/chain_run.py."""
    if source.origin == "bundled" or codegen is False:
        return False
    codegen = codegen_decision(source, codegen)  # once: is_fresh and the answer below share it
    if is_fresh(source, codegen):
        return False
    from atenmap.extract.codegen import is_cached
    from atenmap.source.find import cache_dir

    if is_cached(Path(source.root), cache_dir() / "codegen"):
        return False
    decision = codegen_decision(source, codegen)
    return decision.enabled and decision.may_run


def operator_from_dict(d: dict) -> Operator:
    from atenmap.model import DispatchEntry, Location, OperatorName, UfuncLoop

    return Operator(
        name=OperatorName.parse(d["name"]),
        schema=d["schema"],
        loc=Location(*d["loc"]),
        dispatch=tuple(DispatchEntry(*x) for x in d["dispatch"]),
        has_dispatch_key=d["has_dispatch_key"],
        variants=tuple(d["variants"]),
        structured=d["structured"],
        structured_delegate=OperatorName.parse(d["structured_delegate"]) if d["structured_delegate"] else None,
        structured_inherits=d["structured_inherits"],
        ufunc_inner_loop=tuple(UfuncLoop(k, n, tuple(t)) for k, n, t in d["ufunc_inner_loop"]),
        autogen=tuple(d["autogen"]),
        tags=tuple(d["tags"]),
        python_module=d["python_module"],
        manual_cpp_binding=d["manual_cpp_binding"],
        manual_kernel_registration=d["manual_kernel_registration"],
        other=tuple((k, _freeze(v)) for k, v in d["other"]),
    )


def _freeze(v):
    if isinstance(v, list):
        return tuple(_freeze(x) for x in v)
    return v
