"""Score atenmap's answers for the Inductor kernels of recorded compiled models (bench/compile_gpu_record.py)
against what PyTorch recorded there.

    python bench/compile_score.py fixtures/compile/h200_torch2.11 [--source TREE] [--json OUT]

For each model folder (code/*.py: the output code; expected.json; trace.json.gz: one profiled run):
- every distinct Triton (or C++) kernel of the trace is looked up with inductor.outputcode.find_kernel
  in that model's code/ folder, with the recorded provenance as the ``provenance`` table. It scores
  when (1) the line atenmap gives defines it (``NAME = async_compile...``) and the call line calls
  it, (2) the fused ATen ops atenmap gives are the packets of ``meta["original_aten"]`` of the
  post-grad nodes PyTorch's provenance lists for that kernel (``NAME:handle``), and (3) atenmap's
  user lines are the last frame of the recording script in those nodes' ``meta["stack_trace"]`` (the
  graph's, not the provenance table atenmap read). Kernels of a file without provenance score on (1)
  and (2);
- every other GPU kernel of the trace (cuBLAS, cuDNN, flash attention, ATen's own...) that the trace
  says an ATen op launched: it scores when ``Index.kernel`` finds it and names that op among its
  operators (the static chain's reverse lookup), or when the output code calls that op through
  ``extern_kernels`` / ``torch.ops.aten`` and atenmap's ``aten_op`` names it.

The expected side is read from the recorded files alone, never with atenmap's code (issue 32, item 5):
the file and handle of a kernel from the output code's text (the ``NAME = async_compile`` line, the
``[Provenance debug handles]`` comments), its ops from ``original_aten`` and its user lines from the
``File "...", line N`` frames of the stack traces, each with a plain regular expression here. A kernel
atenmap does not find, or finds in another file, is a miss; it never leaves the denominator.
"""
from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
from pathlib import Path

from atenmap.errors import AtenmapError
from atenmap.inductor.outputcode import aten_op, find_kernel, kind_of

_PACKET = re.compile(r"^(aten\.\w+)")
# A frame of a stack trace as FX records it (Python's traceback format).
_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+)', re.M)
# The script that defined and compiled every recorded model: its frames are the user's lines.
RECORDER = "compile_gpu_record.py"


def _trace(path: Path) -> list[dict]:
    with gzip.open(path, "rt") as f:
        data = json.load(f)
    return data.get("traceEvents", data) if isinstance(data, dict) else data


def _launchers(events: list[dict]) -> dict[str, dict[str, int]]:
    op_of = {e["args"]["External id"]: e.get("name") for e in events
             if e.get("cat") == "cpu_op" and isinstance(e.get("args"), dict) and "External id" in e["args"]}
    out: dict[str, dict[str, int]] = {}
    for e in events:
        if e.get("cat") == "kernel" and isinstance(e.get("args"), dict):
            op = op_of.get(e["args"].get("External id"), "")
            per = out.setdefault(e.get("name", ""), {})
            per[op] = per.get(op, 0) + 1
    return out


def user_line(stack_trace: str) -> tuple[str, int] | None:
    """The last frame of the recording script in one recorded stack trace: ``(file name, line)``."""
    frames = [(Path(f).name, int(ln)) for f, ln in _FRAME.findall(stack_trace or "")]
    mine = [fr for fr in frames if fr[0] == RECORDER]
    return mine[-1] if mine else None


def defined_in(code: Path, name: str) -> Path | None:
    """The output-code file of ``code`` with the line ``NAME = async_compile...`` (its text, no parser)."""
    for p in sorted(code.glob("*.py")):
        if any(ln.startswith(f"{name} = async_compile.") for ln in p.read_text().splitlines()):
            return p
    return None


def _expected(files: dict, path: str, handle: str) -> tuple[set[str], set[tuple[str, int]]] | None:
    f = files.get(Path(path).name)
    if not f or handle not in f.get("kernel_nodes", {}):
        return None
    nodes = {n["name"]: n for n in f["nodes"]}
    ops, users = set(), set()
    for name in f["kernel_nodes"][handle]:
        n = nodes.get(name)
        if n is None:
            continue
        m = _PACKET.match((n.get("original_aten") or "").replace("aten::", "aten."))
        if m:
            ops.add(m.group(1))
        line = user_line(n.get("stack_trace") or "")
        if line:
            users.add(line)
    return ops, users


def score_generated(folder: Path, name: str, exp: dict) -> dict:
    code = folder / "code"

    def prov(p):
        return exp["files"].get(Path(p).name, {}).get("kernel_stack_traces", {})

    home = defined_in(code, name)  # the expected side: from the recorded files alone
    lines = home.read_text().splitlines() if home else []
    handle = next((h for h in exp["files"].get(home.name, {}).get("kernel_nodes", {})
                   if h.rsplit(":", 1)[0] == name and _handle_in(lines, h)), "") if home else ""
    want = _expected(exp["files"], str(home), handle) if handle else None
    k = find_kernel(name, [code], provenance=prov)
    row = {"kernel": name, "found": k is not None, "defined_in": home.name if home else None}
    if k is None:
        return {**row, "definition": False, "aten_ok": False, "user_ok": False}
    mine = Path(k.file).read_text().splitlines()
    row["definition"] = bool(home and Path(k.file).resolve() == home.resolve()
                             and k.line and mine[k.line - 1].startswith(f"{name} = async_compile.")
                             and k.call_line and name in mine[k.call_line - 1])
    ours_ops = {a for a in k.aten if a.startswith("aten.")}  # the output code also names prims.* (Inductor's own)
    ours_user = {(Path(f).name, ln) for f, ln, _c in k.user}
    row.update(file=Path(k.file).name, line=k.line, call_line=k.call_line, aten=sorted(ours_ops),
               user=sorted(ours_user), handle=handle)
    if want is None:
        row.update(aten_ok=None, user_ok=None)
    else:
        row.update(expected_aten=sorted(want[0]), expected_user=sorted(want[1]),
                   aten_ok=ours_ops == want[0], user_ok=bool(want[1]) and ours_user == want[1])
    return row


def _handle_in(lines: list[str], handle: str) -> bool:
    return any(f"] {handle}" in ln for ln in lines if "Provenance debug handles" in ln)


def score_other(ix, name: str, launched_by: dict[str, int], code: Path) -> dict:
    ops = sorted(o for o in launched_by if o)
    row = {"kernel": name[:160], "launched_by": ops}
    if not ops:
        return {**row, "ok": None}
    try:
        m = ix.kernel(name) if ix is not None else None
    except AtenmapError as exc:  # a name atenmap cannot read: a miss, still in the denominator
        m, row["error"] = None, str(exc)
    found = set()
    if m is not None:
        found = {o.split(" ")[0].split(".")[0].replace("aten::", "") for o in m.operators}
    want = {o.replace("aten::", "").split(".")[0] for o in ops}
    via_code = set()
    for op in _called_ops(code):
        if ix is not None:
            via_code |= _chain_ops(ix, op)
        via_code.add(op.split(".")[0])
    row.update(static=sorted(found & want), via_output_code=sorted(via_code & want),
               ok=bool(found & want) or bool(via_code & want))
    return row


def _called_ops(code: Path) -> list[str]:
    """The operators the output code calls as extern kernels or fallbacks (atenmap's ``aten_op``)."""
    ops = []
    for p in code.glob("*.py"):
        for ln in p.read_text().splitlines():
            mm = re.match(r"(?:\w+ = )?((?:extern_kernels|torch\.ops\.aten)\.[\w.]+)\(", ln.strip())
            if mm and kind_of(mm.group(1)):
                k = find_kernel(mm.group(1), [code], provenance=None)
                if k is not None and aten_op(k):
                    ops.append(aten_op(k))
    return list(dict.fromkeys(ops))


_CHAINS: dict[str, set[str]] = {}


def _chain_ops(ix, op: str) -> set[str]:
    """The operators ``op``'s static CUDA chain reaches (itself and its op_call steps, expanded)."""
    if op not in _CHAINS:
        names = {op.split(".")[0]}
        try:
            chain = ix.chain(op, keys=["CUDA"])
        except AtenmapError:  # an op the 2.6.0 index does not know: only its own name
            chain = None
        for kc in chain.keys if chain else ():
            for st in kc.walk():
                if st.role == "op_call":
                    names.add(st.symbol.replace("aten::", "").split(".")[0])
        _CHAINS[op] = names
    return _CHAINS[op]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("folder", type=Path)
    ap.add_argument("--source", default=None)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    from atenmap.api import Index

    ix = None
    try:
        ix = Index.open(args.source)
    except AtenmapError as exc:  # the extern/fallback half needs an index; the rest does not
        print(f"no index ({exc}): extern/fallback kernels scored from the output code only", file=sys.stderr)
    report = {"models": {}}
    for folder in sorted(p for p in args.folder.iterdir() if (p / "expected.json").is_file()):
        exp = json.loads((folder / "expected.json").read_text())
        if not (folder / "trace.json.gz").is_file():
            continue
        launchers = _launchers(_trace(folder / "trace.json.gz"))
        gen = [score_generated(folder, n, exp) for n in launchers if n.startswith(("triton_", "cpp_"))]
        other = [score_other(ix, n, by, folder / "code") for n, by in launchers.items()
                 if not n.startswith(("triton_", "cpp_"))]
        report["models"][folder.name] = {"generated": gen, "other": other}
    _summary(report)
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    return 0


def _summary(report: dict) -> None:
    gen = [r for m in report["models"].values() for r in m["generated"]]
    other = [r for m in report["models"].values() for r in m["other"] if r["ok"] is not None]
    full = [r for r in gen if r.get("definition") and r.get("aten_ok") and r.get("user_ok")]
    report["summary"] = s = {
        "generated_kernels": len(gen), "definition_ok": sum(bool(r.get("definition")) for r in gen),
        "aten_ok": sum(bool(r.get("aten_ok")) for r in gen), "user_ok": sum(bool(r.get("user_ok")) for r in gen),
        "all_three_ok": len(full), "other_kernels": len(other), "other_ok": sum(r["ok"] for r in other),
        "other_by_reverse_lookup": sum(bool(r["static"]) for r in other),
        "other_by_output_code_chain": sum(bool(r["via_output_code"]) for r in other),
        "score": round((len(full) + sum(r["ok"] for r in other)) / max(1, len(gen) + len(other)), 4)}
    print(json.dumps(s, indent=1))


if __name__ == "__main__":
    sys.exit(main())
