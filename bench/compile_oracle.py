"""Record what torch.compile's default backend (Inductor) does with every ATen overload, from
Inductor's own tables in the installed torch: the oracle ``atenmap OP --compile`` is scored on.

    python bench/compile_oracle.py [--out fixtures/compile/oracle_torch2.13.json]

For each overload of ``torch.ops.aten`` that is a key of one of these tables:

- ``lowering``: ``torch._inductor.lowering.lowerings`` (every overload with a lowering, a fallback's
  included);
- ``fallback``: membership of ``torch._inductor.lowering.fallbacks`` (``make_fallback``);
- ``decomposition``: ``torch._inductor.decomposition.select_decomp_table()`` (the table Inductor
  decomposes with under the default config).

each value's function is unwrapped (``inspect.unwrap``: lowerings are ``functools.wraps`` shims)
and written as ``{"file", "line", "qualname"}``: the file relative to the folder holding ``torch/``,
``line`` the ``def`` line (the first line of the function's code that starts with ``def`` or
``async def``; ``co_firstlineno`` is the first decorator's line). A function defined inside
another (``make_pointwise.<locals>.inner``) keeps its ``<locals>`` qualname: the table cannot say
where such a closure was registered, only what made it. A decomposition that torch made at run time
for a CompositeImplicitAutograd op (no Python source of its own) is written with ``"cia": true``, one
that is a builtin (a pybind function such as ``torch.t``: no Python code) with ``"builtin": true``.
Nothing here decides what atenmap should answer; the test that scores it reads this file.
"""
from __future__ import annotations

import argparse
import inspect
import json
import sys
from pathlib import Path

DEFAULT_OUT = Path(__file__).resolve().parent.parent / "fixtures" / "compile" / "oracle_torch2.13.json"


def _where(fn, base: Path) -> dict | None:
    fn = inspect.unwrap(fn)
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    path = Path(code.co_filename)
    try:
        rel = path.resolve().relative_to(base)
    except ValueError:
        return {"file": str(path), "line": code.co_firstlineno, "qualname": fn.__qualname__, "outside": True}
    line = code.co_firstlineno
    try:
        lines = path.read_text().splitlines()
    except OSError:
        lines = []
    for i in range(line - 1, min(len(lines), line + 40)):
        if lines[i].lstrip().startswith(("def ", "async def ")):
            line = i + 1
            break
    return {"file": rel.as_posix(), "line": line, "qualname": fn.__qualname__}


def _name(op) -> str | None:
    """atenmap's operator name of an aten OpOverload (``add.Tensor``, ``mm`` for ``mm.default``)."""
    schema = getattr(op, "_schema", None)
    if schema is None or not schema.name.startswith("aten::"):
        return None
    base = schema.name[len("aten::"):]
    return f"{base}.{schema.overload_name}" if schema.overload_name else base


def record() -> dict:
    import torch
    import torch._inductor.compile_fx  # noqa: F401  (imports every lowering module)
    from torch._inductor import lowering
    from torch._inductor.decomposition import select_decomp_table

    base = Path(torch.__file__).resolve().parent.parent
    decomps = select_decomp_table()
    out: dict[str, dict] = {}

    def entry(op):
        return out.setdefault(_name(op), {"lowering": None, "fallback": False, "decomposition": None})

    for op, fn in lowering.lowerings.items():
        if _name(op):
            entry(op)["lowering"] = _where(fn, base)
    for op in lowering.fallbacks:
        if _name(op):
            entry(op)["fallback"] = True
    for op in list(decomps.keys()):
        if not _name(op):
            continue
        fn = decomps[op]
        where = _where(getattr(fn, "func", fn), base)
        if where is None:
            where = {"builtin": True}
        elif "_special_op_to_decompose_cia" in where.get("qualname", ""):
            where = {"cia": True}
        entry(op)["decomposition"] = where
    return {"torch": torch.__version__, "python": sys.version.split()[0],
            "ops": dict(sorted(out.items()))}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args(argv)
    data = record()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    ops = data["ops"]
    print(f"{len(ops)} overloads: {sum(1 for v in ops.values() if v['lowering'])} lowerings, "
          f"{sum(1 for v in ops.values() if v['fallback'])} fallbacks, "
          f"{sum(1 for v in ops.values() if v['decomposition'])} decompositions -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
