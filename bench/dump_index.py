"""Dump an index to sorted text, to compare two builds fact by fact (issue 24: every fact identical).

    python bench/dump_index.py INDEX.sqlite > a.txt; ... > b.txt; diff a.txt b.txt

Ids depend on the order files were stored, so they are written as what they point at: a fact's
``scope`` as the enclosing fact's (kind, name, line), a file by its path; generated files' paths
(absolute, under a codegen folder whose name holds a hash) from their ``codegen-*/`` part on. Meta
values that differ on every build (times, tokens, paths of the tree) are left out. One line a row,
tab-separated, sorted.
"""
from __future__ import annotations

import json
import re
import sqlite3
import sys

_VOLATILE_META = {"built_at", "fresh_token", "source_root", "codegen_dir", "complete"}
_CODEGEN = re.compile(r"^.*?/codegen-[^/]*/")


def _path(p: str) -> str:
    return _CODEGEN.sub("<codegen>/", p) if p.startswith("/") else p


def dump(path: str, out=sys.stdout) -> int:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    lines: list[str] = []
    for k, v in conn.execute("SELECT key, value FROM meta"):
        if k == "compile_inputs":  # its "extractor" is the stat of atenmap's own inductor.py
            v = json.dumps({kk: vv for kk, vv in json.loads(v).items() if kk != "extractor"}, sort_keys=True)
        if k not in _VOLATILE_META:
            lines.append(f"meta\t{k}\t{v}")
    for p, lang, size, status, gen in conn.execute("SELECT path, language, size, status, generated FROM files"):
        lines.append(f"file\t{_path(p)}\t{lang}\t{size}\t{status}\t{gen}")
    q = ("SELECT fi.path, x.kind, x.name, x.qual, x.line, x.end_line, x.namespace, s.kind, s.name, s.line, x.arg, "
         "x.detail, x.via_macro, x.cond, x.targs FROM facts x JOIN files fi ON fi.id = x.file "
         "LEFT JOIN facts s ON s.id = x.scope")
    for r in conn.execute(q):
        arg = _path(r[10]) if r[1] == "include" else r[10]
        lines.append("fact\t" + "\t".join(map(str, (_path(r[0]), *r[1:7], r[7], r[8], r[9], arg, *r[11:]))))
    for r in conn.execute("SELECT name, base, line, kind, delegate, record FROM operators"):
        lines.append("operator\t" + "\t".join(map(str, r)))
    for r in conn.execute("SELECT operator, key, kernel, structured, explicit FROM dispatch"):
        lines.append("dispatch\t" + "\t".join(map(str, r)))
    for r in conn.execute("SELECT op, overload, role, symbol, file, line, via, registry, cond, seq FROM compile"):
        lines.append("compile\t" + "\t".join(map(str, r)))
    conn.close()
    lines.sort()
    out.write("\n".join(lines) + "\n")
    return len(lines)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: dump_index.py INDEX.sqlite")
    n = dump(sys.argv[1])
    print(f"{n} lines", file=sys.stderr)
