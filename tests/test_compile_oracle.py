"""``--compile`` against Inductor's own tables: fixtures/compile/oracle_torch2.13.json, recorded by
bench/compile_oracle.py from the installed torch 2.13 (lowerings, fallbacks, select_decomp_table()
with each function's file:line). The extractor reads the same torch's Python files (the wheel's
site-packages holds torch/ as a tree of .py files, and torchgen/packaged/ its native_functions.yaml);
nothing of it is imported.

Which torch: the oracle holds torch 2.13's tables, so the test compares them with torch 2.13's files and
nothing else (another release's lowerings and decompositions are other facts at other lines). That is
the torch the tests install: pyproject.toml's ``[test]`` extra pins ``torch==2.13.0`` and .ci/run runs
``pip install -e '.[test]'``, so on CI (``CI=true``) a missing or different torch is a broken install and
FAILS the test (conftest's ``skip_or_fail_on_ci``); elsewhere it skips. The pin and the torch the oracle
recorded move together: test_the_oracle_is_the_pinned_torchs below checks it."""
from __future__ import annotations

import importlib.util
import json
import re
from collections import defaultdict
from pathlib import Path

import pytest

from atenmap.extract.inductor import extract
from atenmap.extract.native_yaml import load_operators
from atenmap.resolve.compile import cia_decomposes, plan

from .conftest import skip_or_fail_on_ci

REPO = Path(__file__).resolve().parents[1]
PINNED = "2.13.0"
ORACLE = REPO / "fixtures" / "compile" / "oracle_torch2.13.json"


def _site() -> Path:
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.origin:
        skip_or_fail_on_ci("torch is not installed (pyproject.toml's [test] extra pins it)")
    site = Path(spec.origin).parent.parent
    version = (site / "torch" / "version.py").read_text()
    if f"'{PINNED}" not in version and f'"{PINNED}' not in version:
        skip_or_fail_on_ci(f"the oracle was recorded with torch {PINNED} (pyproject.toml's [test] extra)")
    return site


def _agrees(o: dict, p) -> list[str]:
    """What differs between the oracle's entry ``o`` and the plan ``p`` (empty: they agree). A
    function made inside another (a ``<locals>`` qualname) is compared by file: the table cannot say
    where it was registered; a ``fallback_handler`` closure stands for any fallback."""
    def same(where: dict, fact) -> bool:
        if fact is None:
            return False
        q = where.get("qualname", "")
        if q.startswith("fallback_handler."):
            return fact.role == "fallback"
        if "<locals>" in q:
            return where["file"] == fact.file
        return (where["file"], where["line"]) == (fact.file, fact.line)

    errs = []
    low = o["lowering"]
    if bool(low) != (p.lowering is not None) or (low and not same(low, p.lowering)):
        errs.append("lowering")
    if o["fallback"] != p.fallback:
        errs.append("fallback")
    d = o["decomposition"]
    if bool(d) != p.in_table:
        errs.append("decomposition")
    elif d and d.get("cia") and not (p.table_why == "cia" and p.table is None):
        errs.append("decomposition")
    elif d and not d.get("cia") and not d.get("builtin") and not same(d, p.table):
        errs.append("decomposition")
    return errs


def test_compile_agrees_with_inductors_tables():
    site = _site()
    oracle = json.loads(ORACLE.read_text())["ops"]
    facts = defaultdict(list)
    for f in extract(site):
        facts[f.op].append(f)
    ops = {str(o.name): o for o in load_operators(site / "torchgen/packaged/ATen/native/native_functions.yaml", site)}
    autogen = {a for o in ops.values() for a in o.autogen}
    bad = {}
    for name, o in oracle.items():
        y = ops.get(name)
        p = plan(facts[name.split(".")[0]] + facts[""], name,
                 cia=bool(y and any(d.key == "CompositeImplicitAutograd" for d in y.dispatch)),
                 preservable=bool(y and cia_decomposes(y.schema)), native=y is not None or name in autogen)
        errs = _agrees(o, p)
        if errs:
            bad[name] = errs
    share = 1 - len(bad) / len(oracle)
    assert len(oracle) > 2000
    assert share >= 0.98, f"{share:.4f} agreement; first differences: {sorted(bad.items())[:20]}"


def test_the_oracle_is_the_pinned_torchs():
    """The torch CI installs is the one the oracle was recorded with: a new pin needs a new oracle
    (bench/compile_oracle.py --out fixtures/compile/oracle_torch<X.Y>.json), not a skipped test."""
    extra = re.search(r"^test = \[(.*)\]$", (REPO / "pyproject.toml").read_text(), re.M).group(1)
    assert f'"torch=={PINNED}"' in extra, extra
    meta = json.loads(ORACLE.read_text())
    assert meta["torch"].split("+")[0] == PINNED, meta["torch"]
