"""Ranked search over operators, stubs, kernels and functions of the index (``Index.search``).

Note [Search ranking]
~~~~~~~~~~~~~~~~~~~~~
SQL narrows, Python ranks. The pattern becomes one LIKE pattern that matches every name holding
its characters in order (``softmax`` -> ``%s%o%f%t%m%a%x%``): a superset of exact, prefix,
substring and subsequence matches, so two queries (operators, facts) fetch every candidate. Each
candidate is then ranked exact (0) > prefix (1) > substring (2) > subsequence (3), all ignoring
case; an operator's base name counts (``add`` is an exact match of ``add.out``), and an operator
found only through a kernel name in its dispatch table ranks no better than a substring match.
A name query is mostly a question about operators, so the order is by kind first: operators,
then stubs, kernels, functions (``softmax`` lists softmax.int, _softmax, log_softmax, … before
the stub softmax_kernel, and flash-attention's ``Softmax`` helper after them), each kind ranked
exact > prefix > substring; subsequence matches, which are guesses, come after all of those.
Then names holding the pattern with its case, hand-written before generated code, the shorter
name, path order.
"""
from __future__ import annotations

import json
import re

from atenmap import devices
from atenmap.errors import UsageError
from atenmap.kinds import FactKind
from atenmap.model_answers import SearchHit
from atenmap.store import FactRow, Store

KINDS = ("op", "stub", "kernel", "function")
_FACT_KINDS = {"stub": (FactKind.DECLARE_DISPATCH, FactKind.REGISTER_DISPATCH), "kernel": (FactKind.REGISTER_DISPATCH, FactKind.GLOBAL),
               "function": (FactKind.FUNCTION, FactKind.IMPL_FUNC, FactKind.META_FUNC)}


def like_pattern(pattern: str) -> str:
    """The LIKE pattern (escape ``\\``) matching names that hold ``pattern``'s characters in order."""
    return "%" + "%".join("\\" + c if c in "%_\\" else c for c in pattern) + "%"


def match_rank(pattern: str, name: str) -> int | None:
    p, n = pattern.lower(), name.lower()
    if n == p:
        return 0
    if n.startswith(p):
        return 1
    if p in n:
        return 2
    it = iter(n)
    return 3 if all(c in it for c in p) else None


def _best(pattern: str, names) -> int | None:
    ranks = [r for r in (match_rank(pattern, n) for n in names if n) if r is not None]
    return min(ranks) if ranks else None


MAX_PATTERN = 1000  # names are far shorter; SQLite refuses LIKE patterns over 50,000 bytes


def search(store: Store, pattern: str, key: str | None = None, kinds: tuple[str, ...] | None = None,
           tag: str | None = None) -> list[SearchHit]:
    """Every hit of ``kinds`` (default: all; only operators with ``tag``), best first. See
    Note [Search ranking]. UsageError for an empty pattern or a kind that does not exist."""
    pattern = pattern.strip().removeprefix("aten::")
    if not pattern:
        raise UsageError("empty search pattern")
    if len(pattern) > MAX_PATTERN:
        raise UsageError(f"search pattern of {len(pattern)} characters; at most {MAX_PATTERN}")
    bad = [k for k in kinds or () if k not in KINDS]
    if bad:
        raise UsageError(f"--kind {bad[0]}: choose from {', '.join(KINDS)}")
    if tag and kinds and set(kinds) - {"op"}:
        raise UsageError("--tag selects operators (yaml tags); it cannot be combined with --kind "
                         + ", ".join(k for k in kinds if k != "op"))
    kinds = kinds or (("op",) if tag else KINDS)
    like = like_pattern(pattern)
    hits: list[SearchHit] = []
    if "op" in kinds:
        hits += _ops(store, pattern, like, key, tag)
    fact_kinds = tuple(dict.fromkeys(k for kind in kinds if kind != "op" for k in _FACT_KINDS[kind]))
    if fact_kinds:
        device = devices.key_device(key) if key else "any"
        hits += _facts(store.search_facts(like, fact_kinds), pattern, set(kinds), device)
    order = {k: i for i, k in enumerate(KINDS)}
    hits.sort(key=lambda h: (h.rank == 3, order[h.kind], h.rank, pattern not in h.name, h.generated, len(h.name),
                             h.name, h.file, h.line))
    return hits


def _ops(store: Store, pattern: str, like: str, key: str | None, tag: str | None) -> list[SearchHit]:
    """Operators; one with a structured_delegate has its delegate's kernels for keys it does not
    list itself (as torchgen fills them in)."""
    out = []
    for name, rec, delegate_rec in store.search_operators(like, key):
        d = json.loads(rec)
        if tag and tag not in d["tags"]:
            continue
        disp = [(k, kern) for k, kern, *_ in d["dispatch"]]
        if delegate_rec:
            own = {k for k, _ in disp}
            via = f" (via {d['structured_delegate']})"
            disp += [(k, kern + via) for k, kern, *_ in json.loads(delegate_rec)["dispatch"] if k not in own]
        if key:
            disp = [(k, kern) for k, kern in disp if k == key]
        rank = _best(pattern, (name, name.split(".")[0]))
        if rank is None:
            rank = max(2, _best(pattern, [kern.split(" ")[0] for _, kern in disp]) or 3)
        shown = ", ".join(f"{k}: {kern}" for k, kern in disp[:3]) + (", …" if len(disp) > 3 else "")
        tags = f"  tags: {', '.join(d['tags'])}" if d["tags"] else ""
        out.append(SearchHit("op", name, d["loc"][0], d["loc"][1], f"{shown}{tags}".strip(), rank))
    return out


def kernel_name(arg: str) -> str:
    """``&at::native::mul_kernel<float>`` -> ``mul_kernel``; ``nullptr`` -> ``""``."""
    name = re.sub(r"<.*", "", arg.strip().lstrip("&").strip()).rsplit("::", 1)[-1]
    return "" if name in ("nullptr", "NULL", "0") else name


def _facts(rows: list[FactRow], pattern: str, kinds: set[str], device: str) -> list[SearchHit]:
    reg_devices: dict[str, set[str]] = {}
    for r in rows:
        if r.kind == FactKind.REGISTER_DISPATCH:
            reg_devices.setdefault(r.name, set()).add(devices.registration_device(r.detail, r.file))
    out = []
    for r in rows:
        if r.kind == FactKind.DECLARE_DISPATCH and "stub" in kinds:
            devs = sorted(reg_devices.get(r.name, ()))
            if device != "any" and device not in devs:
                continue
            rank = match_rank(pattern, r.name)
            if rank is not None:
                out.append(SearchHit("stub", r.name, r.file, r.line,
                               f"DECLARE_DISPATCH({r.arg}); registered for {', '.join(devs) or 'no device'}", rank,
                               r.generated))
        elif r.kind == FactKind.REGISTER_DISPATCH and "kernel" in kinds:
            name, dev = kernel_name(r.arg), devices.registration_device(r.detail, r.file)
            rank = match_rank(pattern, name) if name else None
            if rank is not None and device in ("any", dev):
                out.append(SearchHit("kernel", name, r.file, r.line, f"{r.detail}({r.name}, …) {dev}", rank, r.generated))
        elif r.kind == FactKind.GLOBAL and "kernel" in kinds:
            rank = match_rank(pattern, r.name)
            if rank is not None and device in ("any", "cuda"):
                out.append(SearchHit("kernel", r.name, r.file, r.line, f"__global__ {r.qual}", rank, r.generated))
        elif r.kind in _FACT_KINDS["function"] and "function" in kinds:
            rank = match_rank(pattern, r.name)
            if rank is not None and (device == "any" or devices.file_device(r.file) == device):
                name = f"TORCH_IMPL_FUNC({r.name})" if r.kind == FactKind.IMPL_FUNC else r.name
                extra = r.qual.rsplit("::", 1)[-1] if r.kind == FactKind.META_FUNC else r.qual
                out.append(SearchHit("function", name, r.file, r.line, "" if extra == name else extra, rank, r.generated))
    return out
