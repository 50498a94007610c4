"""Score ``atenmap OP --backward`` against the autograd oracle (bench/autograd_oracle.py): for each
OpInfo sample recorded on CPU, does the backward atenmap shows for the OpInfo's operator name the
autograd node (``grad_fn``) real PyTorch recorded?

    python bench/bench_autograd.py --tree PATH_TO_PYTORCH_2.6.0 \
        [--oracle fixtures/oracle/autograd_cpu_torch2.13.json] [--json out.json]

Each OpInfo names an operator (``aten_name``: ``matmul``, ``linear``, ``fft_ihfft2``). Its node
names, as atenmap shows them for the CPU key (``Backward.nodes()``: the entry's node where it runs,
else those of the operators a composite op decomposes into, Note [Composite ops' backward]), are
gathered over every overload of that name (a Python call reaches any of them). A sample is:

* named: its ``grad_fn`` is among them;
* missed: it is not;
* skew (apart, neither pass nor fail): the operator name is not in the tree's native_functions.yaml
  (read from the file; Python-level functions such as ``nn.functional.softmin`` land here), or the
  node's class is not in the Functions.h the tree's own gen_autograd wrote (read from the file: a
  node torch 2.13 has and 2.6.0 does not).

Then issue 38's common calls (bench/autograd_common.py; truth: ``--common``, recorded from torch by
``autograd_oracle.py --common``): ``Index.output_answer`` of each call's text on CPU, asked twice, from
the text alone and with the shapes the recording used (``--shape``, Note [A branch the ranks pick]). A
call is right when the answer is decided and is the recorded node; "not decided" (the ranks not given,
the candidates ranked) and a wrong node are counted apart.

Exit status 0 whatever the score: this is a measurement, not a test.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_ORACLE = REPO / "fixtures" / "oracle" / "autograd_cpu_torch2.13.json"
DEFAULT_COMMON = REPO / "fixtures" / "oracle" / "autograd_common_cpu_torch2.13.json"
sys.path.insert(0, str(Path(__file__).resolve().parent))
from autograd_common import COMMON, SHAPED  # noqa: E402  (the one list of the calls)


def score_common(ix, truth: dict[str, str]) -> dict:
    """Each common call's answer, from its text alone and with its shapes: right, not decided or wrong."""
    from atenmap.resolve.callfacts import facts_from_options

    rows = []
    for group, calls in (("common", COMMON), ("shaped", SHAPED)):
        for call, shapes in calls:
            want = truth.get(f"{call} | {shapes}")
            row = {"group": group, "call": call, "shapes": shapes, "truth": want}
            for how, shape in (("by_text", None), ("by_shapes", shapes)):
                got = ix.output_answer(facts_from_options(shape=shape, example=call), "CPU")
                row[how] = ("right" if got.decided and got.nodes == (want,) else
                            "not decided" if not got.decided else "wrong")
                row[how + "_nodes"] = list(got.nodes[:4])
            rows.append(row)
    return {"rows": rows, **{f"{g} {how}": {v: sum(1 for r in rows if r["group"] == g and r[how] == v)
                                            for v in ("right", "not decided", "wrong")}
                             for g in ("common", "shaped") for how in ("by_text", "by_shapes")}}


def tree_ops(tree: Path) -> dict[str, list[str]]:
    """base name -> overload names, from the tree's native_functions.yaml text."""
    yaml = tree / "aten" / "src" / "ATen" / "native" / "native_functions.yaml"
    out: dict[str, list[str]] = {}
    for name in re.findall(r"^- func: ([\w.]+)\(", yaml.read_text(), re.M):
        out.setdefault(name.split(".")[0], []).append(name)
    return out


def tree_nodes(codegen_dir: str | None) -> set[str] | None:
    """Node classes the tree's gen_autograd wrote (``struct TORCH_API MmBackward0``), or None."""
    if not codegen_dir:
        return None
    path = Path(codegen_dir) / "autograd" / "Functions.h"
    if not path.is_file():
        return None
    return set(re.findall(r"struct (?:TORCH_API )?(\w+) : public", path.read_text()))


def score(ix, oracle: dict, tree: Path) -> dict:
    ops = tree_ops(tree)
    nodes = tree_nodes(ix.store.meta().get("codegen_dir"))
    verdicts, times = [], []
    shown: dict[str, set[str]] = {}
    for key, rec in oracle["ops"].items():
        base = rec["aten_name"]
        for node, count in rec["nodes"].items():
            v = {"opinfo": key, "op": base, "node": node, "samples": count}
            verdicts.append(v)
            if base not in ops:
                v["verdict"], v["reason"] = "skew", "not an operator of this tree's native_functions.yaml"
                continue
            if nodes is not None and node not in nodes:
                v["verdict"], v["reason"] = "skew", "node not in this tree's generated Functions.h"
                continue
            if base not in shown:
                t = time.perf_counter()
                shown[base] = {n for name in ops[base] for n in ix.backward(name, keys=["CPU"], expand=False).nodes()}
                times.append(time.perf_counter() - t)
            ok = node in shown[base]
            v["verdict"] = "named" if ok else "missed"
            if not ok:
                v["reason"] = "atenmap shows " + (", ".join(sorted(shown[base])) or "no node")
    scored = [v for v in verdicts if v["verdict"] in ("named", "missed")]
    n = sum(v["samples"] for v in scored)
    named = sum(v["samples"] for v in scored if v["verdict"] == "named")
    return {"samples": n, "named": named, "percent": round(100.0 * named / n, 1) if n else None,
            "skew_samples": sum(v["samples"] for v in verdicts if v["verdict"] == "skew"),
            "pairs": len(scored), "pairs_named": sum(1 for v in scored if v["verdict"] == "named"),
            "ops": len(shown), "seconds": round(sum(times), 1), "verdicts": verdicts}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tree", required=True)
    ap.add_argument("--oracle", default=str(DEFAULT_ORACLE))
    ap.add_argument("--json", help="write every (OpInfo, node) verdict here")
    ap.add_argument("--common", default=str(DEFAULT_COMMON), help="the common calls' truth (autograd_oracle.py --common)")
    a = ap.parse_args(argv)
    sys.path.insert(0, str(REPO / "src"))
    from atenmap.api import Index

    oracle = json.loads(Path(a.oracle).read_text())
    ix = Index.open(a.tree)
    s = score(ix, oracle, Path(a.tree))
    missed = Counter((v["op"], v["node"]) for v in s["verdicts"] if v["verdict"] == "missed")
    for (op, node), _n in missed.most_common(40):
        why = next(v["reason"] for v in s["verdicts"] if v["op"] == op and v["node"] == node)
        print(f"  missed {op:<34} {node:<28} {why[:90]}")
    skew = Counter(v["reason"] for v in s["verdicts"] if v["verdict"] == "skew")
    print(f"\noracle: torch {oracle['torch']} on {oracle['device']}, {oracle['counts']['opinfos']} OpInfos")
    print(f"samples named: {s['named']} of {s['samples']} ({s['percent']} %); (OpInfo, node) pairs "
          f"{s['pairs_named']} of {s['pairs']}; skew apart: {s['skew_samples']} samples ({dict(skew)}); "
          f"{s['ops']} operator names, backward in {s['seconds']} s")
    common = json.loads(Path(a.common).read_text())
    c = score_common(ix, common["calls"])
    for r in c["rows"]:
        if r["by_text"] != "right" or r["by_shapes"] != "right":
            print(f"  {r['group']:<6} {r['call'] + ' ' + r['shapes']:<40} torch: {r['truth']:<20} text: {r['by_text']:<11} "
                  f"shapes: {r['by_shapes']:<11} {', '.join(r['by_shapes_nodes'])[:60]}")
    for g, n in (("common", len(COMMON)), ("shaped", len(SHAPED))):
        t, w = c[g + " by_text"], c[g + " by_shapes"]
        print(f"{g} calls (torch {common['torch']}, CPU): from the text {t['right']}/{n} right ({t['not decided']} "
              f"not decided, {t['wrong']} wrong); with --shape {w['right']}/{n} right ({w['not decided']} not "
              f"decided, {w['wrong']} wrong)")
    if a.json:
        Path(a.json).write_text(json.dumps({**s, "common": c}, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
