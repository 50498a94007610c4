"""A first answer on a tree never indexed, from the few files its chain needs (Note [Query-driven preview]).

``partial_index(info, op, keys)`` finds those files with a byte scan, parses only them with the
build's own per-file parse (build._parse_one) into a temporary Store beside the index, and returns
an ``api.Index`` over it; ``None`` when there is no preview to give. The caller closes it (the
temporary store is then removed).
"""
from __future__ import annotations

import os
import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

# Note [Query-driven preview]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~
# On a tree never indexed the first answer waits for the parse of all ~2,000 files (~10 s of CPU
# for 2.6.0), while one chain's steps lie in a few of them (mul.out on CUDA: 13 files, 0.2 MB).
# On a terminal, before the full build, the preview finds them with a cheap scan of the bytes:
# 1. the yaml entry's kernels for the asked keys (with CompositeImplicit/Explicit, and those of
#    its structured delegate; a ufunc's inner loops and ``<op>_stub``) and the op's base name
#    (TORCH_META_FUNC);
# 2. every tree file is read once; a name's files are those where it appears *defined*, by text:
#    TORCH_IMPL_FUNC/TORCH_META_FUNC(name), a DECLARE/DEFINE/REGISTER_*_DISPATCH naming it (stubs),
#    ``#define name``, ``struct|class name ... {``, or ``name(params) ... {`` (a body follows the
#    parameter list: a call never has one); a stub also where a KERNEL/DISPATCH/IMPLEMENT macro
#    line pastes its name (_PASTED_STUB);
# 3. those files are parsed (build._parse_one, as the full build); the calls and launches inside
#    the definitions of the names asked, and the kernels a REGISTER_*DISPATCH of an asked stub
#    names, are the next names; a call that names an operator (``at::add``) brings that operator's
#    kernels. A name defined in more than MANY_DEFINITIONS files (MANY_REGISTRATIONS for a stub or
#    the op's own kernels; a common helper or method name otherwise) is not followed: the chain
#    picks among them by includes and namespaces, which the scan does not know, and following all
#    would read half the tree. Nor are ATen's core, top-level and SIMD files (_infrastructure).
# 4. it stops after ``depth + 3`` rounds (the chain's depth, and the yaml -> stub -> register
#    steps), or gives up when more than MAX_FILES files or MAX_BYTES bytes are wanted.
# The files are stored with every tree path known, so includes resolve as in the full index. The
# answer is the chain of that partial store: the same resolver, on fewer facts. A step whose
# definition was not found is missing, and a choice among definitions (ranking by includes) may
# differ, so it is labelled as a preview and the complete answer always follows (the preview is
# identical to it for 29 of 46 operators measured: docs/performance.md, "a query-driven first
# answer"). The temporary store is removed once the preview is printed.
MAX_FILES = 60
MAX_BYTES = 6_000_000
MANY_DEFINITIONS = 3
MANY_PASTED = 2  # files registering a stub by a macro that pastes its name (_PASTED_STUB)
MANY_REGISTRATIONS = 8  # a stub's files (declaration, definition, a registration per device); a native's overloads
_FOLLOW = frozenset({"call", "launch"})
_DEFINES = frozenset({"function", "global", "impl_func", "meta_func", "class", "macro_block"})
_STUBS = frozenset({"declare_dispatch", "define_dispatch", "register_dispatch"})
_IDENT = re.compile(r"[A-Za-z_]\w*\Z")
_CLASSLIKE = re.compile(r"[A-Z][a-z]\w*\Z")


@dataclass
class Closure:
    """The files the preview parsed, and what it read to find them."""
    files: list[str] = field(default_factory=list)
    total: int = 0  # tree files scanned
    rows: dict[str, tuple[str, list[tuple]]] = field(default_factory=dict)  # rel -> (status, fact rows)
    gave_up: str = ""  # why there is no preview (too many files), or ""
    meta: dict[str, tuple[str, int, int]] = field(default_factory=dict)  # every tree file: (language, size, mtime)


def never_indexed(info) -> bool:
    """No index of this tree at all (a stale one is refreshed in about a second: no preview)."""
    from atenmap.build import index_path

    return info.origin != "bundled" and not index_path(info).exists()


@contextmanager
def partial_index(info, op: str, keys: list[str] | None, depth: int = 8) -> Iterator["tuple | None"]:
    """``(Index over the preview's files, Closure)``, or None when there is none (an unknown
    operator, no kernel for the keys, too many files): then the complete answer says what is wrong."""
    from atenmap import build
    from atenmap.api import Index
    from atenmap.errors import AtenmapError
    from atenmap.source.find import index_dir
    from atenmap.store import Store

    root = Path(info.root)
    folder = index_dir(info)
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f"preview-{os.getpid()}.sqlite"
    tmp.unlink(missing_ok=True)
    store = Store.create(tmp)
    try:
        store.begin()
        rows, disp = build._operator_rows(str(root))
        store.replace_operators(rows, disp)
        ix = Index(info, store)
        try:
            found = ix.lookup(op)
        except AtenmapError:
            yield None
            return
        if keys and any(k.lower() == "all" for k in keys):
            keys = None
        elif not keys:
            from atenmap import devices

            keys = devices.common_keys(ix.operator_keys(found.operator)) or None
        closure = find_files(root, found.operator, ix, keys, depth)
        if closure.gave_up or not closure.files:
            yield None
            return
        _store_files(store, info, closure)
        yield ix, closure
    finally:
        store.close()
        tmp.unlink(missing_ok=True)


def _store_files(store, info, closure: Closure) -> None:
    from atenmap import build
    from atenmap.build import BuildReport, _Intake

    report = BuildReport(store.path)
    intake = _Intake(store, report, None)
    intake.paths = set(closure.meta)  # includes resolve against the whole tree, as in the full index
    intake.all_known = True
    for rel in closure.files:
        status, rows = closure.rows[rel]
        intake.meta_of[rel] = closure.meta[rel]
        intake.take((rel, status, rows, None))
    gen = build._codegen(info, build.codegen_decision(info, False), None, report)
    store.set_meta(**build._expected_meta(info), **gen.meta, pytorch_version=info.version,
                   pytorch_commit=info.commit or "", yaml_stat="", preview="1")
    store.commit()
    store.finish()
    store.set_meta(complete="1")


def _seed_names(ix, operator, keys: list[str] | None) -> set[str]:
    """The kernels of ``operator`` (and of its structured delegate) for ``keys`` (composite keys
    included; every key when None)."""
    names = set()
    for op in (operator, ix._get(str(operator.structured_delegate)) if operator.structured_delegate else None):
        if op is None:
            continue
        for d in op.dispatch:
            if keys is None or d.key in keys or d.key.startswith("Composite"):
                names.add(d.kernel.rsplit("::", 1)[-1])
        if op.ufunc_inner_loop:  # the ufunc's inner loops (ufunc/<name>.h) and the stub its generated kernel calls
            names.update(u.name for u in op.ufunc_inner_loop)
            names.add(f"{op.name.name}_stub")
    return {n for n in names if _IDENT.match(n)}


# What may stand before a name on its line, and after it, where the name is defined (step 2 of
# Note [Query-driven preview]); checked only where the name occurs, so a file costs one find.
_MACRO_BEFORE = re.compile(rb"(?:TORCH_(?:PRECOMPUTE_)?(?:IMPL|META)_FUNC2?\s*\(\s*|_DISPATCH\w*\s*\((?:[^;)]*\W)?|#\s*define\s+)\Z")
_META_BEFORE = re.compile(rb"TORCH_(?:PRECOMPUTE_)?META_FUNC2?\s*\(\s*\Z")
_CLASS_BEFORE = re.compile(rb"\b(?:struct|class)\s+(?:\w+\s+)*\Z")
_CLASS_AFTER = re.compile(rb"\b[^;{()]*\{")
_FUNCTION_BEFORE = re.compile(rb"[ \t]*(?:(?!return\b|else\b|case\b)[\w:<>,*&]+[ \t]+)+[*&]?(?:\w+::)*\Z")
_FUNCTION_AFTER = re.compile(rb"\s*(?:<[^;{}()]*>)?\s*\((?:[^;{}()]|\([^;{}()]*\))*\)[\s\w:&*]*(?:->[^;{]*)?\{")
_WORD = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


# A stub registered by a macro that pastes its name (``STATIC_IMPLEMENT_COMPLEX_KERNEL_WITH_AVX512(exp)``
# expands to ``ALSO_REGISTER_AVX512_DISPATCH(exp_stub, ...)``): an upper-case macro at the start of
# a line, named for a kernel, a dispatch or an implementation, given the stub's name without ``_stub``.
_PASTED_STUB = rb"(?m)^[ \t]*[A-Z0-9_]*(?:KERNEL|DISPATCH|IMPLEMENT)[A-Z0-9_]*\(\s*%s\s*[,)]"


def defines(data: bytes, name: str, meta_only: bool = False) -> bool:
    """Whether ``data`` defines ``name`` by the text around one of its occurrences."""
    needle = name.encode()
    i = data.find(needle)
    while i >= 0:
        j = i + len(needle)
        if (i == 0 or data[i - 1] not in _WORD) and (j == len(data) or data[j] not in _WORD):
            before = data[data.rfind(b"\n", 0, i) + 1:i]
            if meta_only:
                if _META_BEFORE.search(before):
                    return True
            elif _MACRO_BEFORE.search(before) \
                    or _CLASS_BEFORE.search(before) and _CLASS_AFTER.match(data, j, j + 4000) \
                    or _FUNCTION_BEFORE.match(before) and _FUNCTION_AFTER.match(data, j, j + 4000):
                return True
        i = data.find(needle, j)
    return False


def find_files(root: Path, operator, ix, keys: list[str] | None, depth: int = 8) -> Closure:
    """The closure of Note [Query-driven preview] for ``operator``, each file parsed once."""
    from atenmap import build, config, devices

    closure = Closure()
    texts: dict[str, bytes] = {}
    limit = config.max_file_bytes()
    for rel, lang, size, mtime in build.walk_sources(root):
        closure.meta[rel] = (lang, size, mtime)
        data, _why = build.read_source(os.path.join(root, rel), limit)
        if data is not None:
            texts[rel] = data
    closure.total = len(closure.meta)
    wanted = {devices.key_device(k) for k in keys} if keys else {"any"}
    if "any" in wanted:
        wanted = {"any"}
    allowed = [rel for rel in texts if any(devices.file_allowed(rel, d) for d in wanted)]
    kernels = [rel for rel in allowed if not _infrastructure(rel)]
    natives = [rel for rel in allowed if rel.startswith("aten/src/ATen/native/")]  # at::native:: kernels
    seeds = _seed_names(ix, operator, keys)
    bases = ix.store.operator_bases()
    asked: set[str] = set()
    frontier = set(seeds)
    size = 0
    native_files: set[str] = set()
    stubs: set[str] = set()  # a stub has its declaration, definition and registrations in different files
    for round_ in range(depth + 3):
        frontier -= asked
        if not frontier:
            break
        asked |= frontier
        new_files: list[str] = []
        found = {name: _defined_in(name, texts, natives if round_ == 0 else kernels) for name in sorted(frontier)}
        if round_ == 0:  # TORCH_META_FUNC(base) of the op and its delegate
            for op in (operator, ix._get(str(operator.structured_delegate)) if operator.structured_delegate else None):
                if op is not None and op.name.name not in found:
                    found[op.name.name] = _defined_in(op.name.name, texts, allowed, meta_only=True)
        for name, where in found.items():
            if name not in stubs and any(rel in closure.rows for rel in where):  # defined in a file the chain is already in: that one (the resolver's includes rank it first)
                continue
            if len(where) <= (MANY_REGISTRATIONS if name in stubs or round_ == 0 else MANY_DEFINITIONS):
                new_files += [rel for rel in where if rel not in closure.rows and rel not in new_files]
        if len(closure.files) + len(new_files) > MAX_FILES:
            closure.gave_up = f"more than {MAX_FILES} files"
            return closure
        size += sum(len(texts[rel]) for rel in new_files)
        if size > MAX_BYTES:
            closure.gave_up = f"more than {MAX_BYTES} bytes"
            return closure
        for rel in new_files:
            _rel, status, rows, _put = build._parse_one((str(root), rel, closure.meta[rel][0]))
            closure.rows[rel] = (status, rows)
            closure.files.append(rel)
        frontier = set()
        stubs = {r[1] for rel in closure.files for r in closure.rows[rel][1] if r[0] in _STUBS}
        if round_ == 0:
            native_files = set(closure.files)
        for rel in closure.files:
            frontier |= _next_names(closure.rows[rel][1], asked, rel in native_files, bases, ix, keys)
    return closure


# ATen's SIMD types, one copy per instruction set (vec256/vsx, zarch, neon, ...): what a CPU kernel's
# lambda computes with, not steps of its chain; following their names would read them all.
_SIMD = "aten/src/ATen/cpu/vec/"
_CORE = ("aten/src/ATen/core/", "aten/src/ATen/detail/", "aten/src/ATen/functorch/", "aten/src/ATen/templates/")


def _infrastructure(rel: str) -> bool:
    """Files the chain does not follow a call into past the native function (resolve/chain.py's
    _may_follow): ATen's core and its top-level files (TensorIterator, Parallel, Dispatch); and
    the preview does not look into ATen's SIMD types (_SIMD)."""
    return rel.startswith(_CORE) or rel.startswith("aten/src/ATen/") and rel.count("/") == 3 \
        or rel.startswith(_SIMD)


def _defined_in(name: str, texts: dict[str, bytes], among: list[str], meta_only: bool = False) -> list[str]:
    found = [rel for rel in among if defines(texts[rel], name, meta_only)]
    if name.endswith("_stub") and not meta_only:  # _PASTED_STUB, where few files have such a line
        pasted = re.compile(_PASTED_STUB % re.escape(name[:-5].encode()))
        more = [rel for rel in among if rel not in found and name[:-5].encode() in texts[rel]
                and pasted.search(texts[rel])]
        if len(more) <= MANY_PASTED:
            found += more
    return found


def _next_names(rows: list[tuple], asked: set[str], native_file: bool, bases: set[str], ix, keys) -> set[str]:
    """Names the chain may follow from the definitions of ``asked``: calls (not to std/c10, nor
    member calls but the loop helpers and typed ones, as resolve/chain.py's _visit), launches, names
    in template arguments (functors), the kernels registered for an asked stub, and the kernels of
    the operators called by name in a native's own file (Note [Re-dispatch])."""
    from atenmap.resolve.chain import LOOP_HELPERS
    from atenmap.resolve.opcalls import NOT_OPS

    spans = [(r[3], r[4], native_file) for r in rows if r[0] in _DEFINES and r[1] in asked]
    names: set[str] = set()
    for r in rows:
        kind, name, qual, line, detail, targs = r[0], r[1], r[2], r[3], r[8], r[11]
        if kind == "register_dispatch" and name in asked and r[7]:
            names.add(r[7].lstrip("&").rsplit("::", 1)[-1])
            continue
        if kind not in _FOLLOW:
            continue
        inside = [native for a, b, native in spans if a <= line <= b]
        if not inside:
            continue
        if kind == "launch":
            names.add(name)
            continue
        if targs:  # functors: classes named in template arguments, CamelCase in ATen
            names.update(t for t in re.findall(r"[A-Za-z_]\w*", targs) if _CLASSLIKE.match(t))
        if qual.startswith(("std::", "c10::")) or name.isupper():
            continue
        if detail == "member" and name not in LOOP_HELPERS:
            if "::" in qual:  # a method of a local of a named class: that class's file
                names.add(qual.rsplit("::", 2)[-2])
            continue
        if qual.startswith("at::") and qual.split("::")[1] not in NOT_OPS:  # at::cuda::blas::gemm is a call
            base = name[:-4] if name.endswith(("_out", "_outf")) and name not in bases else name
            base = base[:-1] if base.endswith("_outf") else base
            if any(inside) and base in bases:
                for op_name in ix.store.operators_by_base(base):
                    op = ix._get(op_name)
                    if op is not None:
                        names |= _seed_names(ix, op, keys)
            continue
        names.add(name)
    return {n for n in names - asked if _IDENT.match(n)}
