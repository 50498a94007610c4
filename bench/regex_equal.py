"""Prove that string code which replaced a regex in extract/ answers as the regex did, on every input
of the real trees and on fuzz (issue 32: regexes only where tree-sitter cannot see).

    .venv/bin/python bench/regex_equal.py [--tree T ...] [--fuzz N] [--only NAME]

Each case is (the old regex, kept here as the reference; the new function; how to read its inputs
out of one file's bytes: every slice of the kind the extractor or the reader hands it, e.g. every
statement, line, window before a parenthesis or word of the file, a superset of the real calls;
objects.whole_arguments asks for the file's 300 commonest words and a sample of the rest). The
inputs are drawn from every file a build reads (build.walk_sources) of each tree (default: the
2.6.0 and 1.13.1 test trees) and fixtures/pytorch-mini, then from N fuzzed texts made of pieces of
the shapes (and, for some cases, N more that start as the shape does, of the shape's own pieces, or
near-misses of a template). A difference is printed with its input and fails the run; each case
prints how many inputs it checked and how many the regex found something in.
"""
from __future__ import annotations

import argparse
import random
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))
TREES = [Path.home() / ".cache/atenmap/test-trees" / f"pytorch-{v}" for v in ("2.6.0", "1.13.1")]

from atenmap.extract import (branches, calls, definitions, dispatch, enclosing, jiterator, macros, nodes,  # noqa: E402
                             objects, operators, preproc, scan, textblocks)
from atenmap.extract.blanking import CODE_NOISE, COMMENTS, mask_code, replace_comments, spaces  # noqa: E402


class Case:
    def __init__(self, name: str, old: Callable, new: Callable, inputs: Callable[[bytes], Iterator]):
        self.name, self.old, self.new, self.inputs = name, old, new, inputs
        self.count = self.differ = self.found = 0

    def check(self, x) -> None:
        self.count += 1
        a, b = self.old(x), self.new(x)
        self.found += bool(a)
        if a != b:
            self.differ += 1
            if self.differ <= 5:
                print(f"{self.name}: {x[:200]!r}: regex {a!r}, new {b!r}")


# ---- extract/enclosing.py (the runs block's reading of masked text)
_E_CONTROL = re.compile(rb"^(?:else\s+)?(if|switch|for|while|catch)\b\s*(?:constexpr\s*)?\((.*)\)\s*$", re.S)
_E_LABEL = re.compile(rb"^\s*((?:case\b(?:::|[^:;])*?|default)\s*:)(?!:)")
_E_EARLY = re.compile(rb"^if\s*\((.*)\)\s*return\b", re.S)
_E_SINGLE_IF = re.compile(rb"^(?:else\s+)?if\s*(?:constexpr\s*)?\(")
_E_DISPATCH = re.compile(rb"(AT_DISPATCH_\w+)\s*$")
_E_FUNC_TAIL = re.compile(rb"\)\s*(?:(?:const|noexcept|override|final|volatile|&&?|->\s*[\w:<>,*&\s]+?)\s*)*$")
_E_SCOPE = re.compile(rb"\b(namespace|class|struct|union|enum|extern)\b")
_E_TOKEN = re.compile(rb"[;{}()]")
_E_DIRECTIVE = re.compile(rb"\n[ \t]*#(?:[^\n]*\\\n)*[^\n]*")


def _masked(data: bytes) -> bytes:
    return _E_DIRECTIVE.sub(spaces, b"\n" + CODE_NOISE.sub(spaces, data))[1:]


def _statements(data: bytes) -> Iterator[bytes]:
    """The text before each ``; { }`` back to the previous one (a statement or a block's head),
    as is and stripped, and before each ``(`` (a call's head)."""
    t = _masked(data)
    last = 0
    for m in _E_TOKEN.finditer(t):
        piece = t[last:m.start()]
        yield piece
        yield piece.strip()
        if m.group() != b"(":
            last = m.end()


def _label_texts(data: bytes) -> Iterator[bytes]:
    t = _masked(data)
    for m in re.finditer(rb"[;{}]", t):
        yield t[m.end():m.end() + 300]


def _windows(data: bytes) -> Iterator[bytes]:
    t = _masked(data)
    p = t.find(b"(")
    while p >= 0:
        yield t[max(0, p - 80):p]
        p = t.find(b"(", p + 1)


def _group(m: re.Match | None, *g: int):
    return None if m is None else m.group(*g)



# ---- extract/textblocks.py (files tree-sitter cannot fit: brace matching)
_T_BRACE_OR_NS = re.compile(rb"[{}]|\b(?:inline\s+)?namespace\b(?:\s+([A-Za-z_][\w:]*))?\s*(?=\{)")
_T_AFTER_PARAMS = re.compile(rb"^(?:\s|const\b|override\b|noexcept\b|final\b|mutable\b|volatile\b|&|"
                             rb"->\s*[\w:<>,\s&*]+)*$")
_T_NAME_BEFORE = re.compile(rb"((?:[A-Za-z_]\w*::)*~?[A-Za-z_]\w*)\s*$")
_T_IMPL_HEAD = re.compile(rb"\b(TORCH_IMPL_FUNC|TORCH_META_FUNC2?|TORCH_PRECOMPUTE_META_FUNC2?)\s*\(([^()]*)\)\s*$")


def _old_tokens(masked: bytes) -> list:
    return [(m.start(), m.group()) if m.group() in (b"{", b"}") else ("ns", m.group(1) or b"")
            for m in _T_BRACE_OR_NS.finditer(masked)]


def _new_tokens(masked: bytes) -> list:
    return [(at, tok) if tok in (b"{", b"}") else ("ns", tok) for at, tok in textblocks._tokens(masked)]


def _heads(data: bytes) -> Iterator[bytes]:
    """Between each ``{`` and the ``)`` before it (400 bytes back at most), as _function_before reads."""
    t = mask_code(data)
    b = t.find(b"{")
    while b >= 0:
        close = t.rfind(b")", max(0, b - 400), b)
        if close >= 0:
            yield t[close + 1:b]
        b = t.find(b"{", b + 1)


def _before_parens(data: bytes) -> Iterator[tuple[bytes, int, int]]:
    t = mask_code(data)
    p = t.find(b"(")
    while p >= 0:
        yield t, max(0, p - 200), p
        p = t.find(b"(", p + 1)


def _old_name(x):
    m = _T_NAME_BEFORE.search(*x)
    return m and (m.start(1), m.group(1))


def _old_impl(x):
    m = _T_IMPL_HEAD.search(*x)
    return m and (m.start(1), m.group(1), m.group(2))


# ---- extract/definitions.py, preproc.py, branches.py
_D_SPEC = re.compile(rb"\b(?:" + b"|".join(definitions._SPEC_WORDS) + rb")\b")
_P_GUARD_DEFINE = re.compile(r"[ \t]*#[ \t]*define[ \t]+(\w+)[ \t]*(?://[^\n]*)?$")
_P_CODE_BEFORE = re.compile(r"^[ \t]*[^\s#/*]", re.M)
_B_DISPATCH = re.compile(rb"\b(AT_DISPATCH_[A-Z0-9_]+)\s*\(")


def _uncommented_statements(data: bytes) -> Iterator[bytes]:
    for x in _statements(data):
        yield COMMENTS.sub(b" ", x) if b"/" in x else x
    for line in data.split(b"\n"):
        yield line


def _text_lines(data: bytes) -> Iterator[str]:
    text = data.decode("utf-8", "replace")
    yield replace_comments(text, "")
    for line in text.split("\n"):
        yield line
        yield line.lstrip("\r\n \t")



# ---- extract/calls.py, operators.py, nodes.py (declarations read back from a use)
_C_BUILTIN_BEFORE = re.compile(rb"(?:\A|[\s(,;{])(?:const\s+)?(int64_t|int32_t|int|double|float|bool|size_t|long|char)"
                               rb"\s*[&*]?\s*\Z")
_C_TEMPLATE_PARAM = re.compile(rb"\b(?:typename|class)\s+([A-Za-z_]\w*)\s*(?=[,>=])")
_O_TENSOR_DECL = re.compile(rb"(?<![\w:])(?:at::)?Tensor\s*&{0,2}\s*([A-Za-z_]\w*)\s*(?=[,)=;{(\[])")
_N_AUTO_INIT = re.compile(rb"=\s*((?:[A-Za-z_]\w*::)*[A-Za-z_]\w*(?:<[^;{}()]*>)?)\s*\{")
_WORD_START = re.compile(rb"\b[A-Za-z_]")


def _before_words(data: bytes) -> Iterator[tuple[bytes, int, int]]:
    for m in _WORD_START.finditer(data):
        p = m.start()
        yield data, max(0, p - 40), p
        yield data, max(0, p - 9), p


def _spans(data: bytes) -> Iterator[tuple[bytes, int, int]]:
    yield data, 0, len(data)
    b = data.find(b"{")
    while b >= 0:
        yield data, b, min(len(data), b + 3000)
        b = data.find(b"{", b + 1)


def _after_equals(data: bytes) -> Iterator[bytes]:
    p = data.find(b"=")
    while p >= 0:
        yield data[p:p + 80]
        p = data.find(b"=", p + 1)


def _old_builtin(x):
    m = _C_BUILTIN_BEFORE.search(*x)
    return m.group(1).decode() if m else ""


# ---- extract/jiterator.py
_J_NAME = re.compile(rb'\b(?:static\s+)?(?:constexpr\s+)?(?:const\s+)?char\s+([A-Za-z_]\w*)\s*\[\s*\]\s*=\s*"(\w+)"\s*;')
_J_CODE = re.compile(rb"\b([A-Za-z_]\w*)\s*=\s*(?:[A-Za-z_]\w*\s*\+\s*)*jiterator_stringify\s*\(")


# ---- extract/dispatch.py, macros.py, scan.py, objects.py
_DI_USE = re.compile(rb"^[ \t]*(DECLARE_DISPATCH|DEFINE_DISPATCH|(?:ALSO_)?REGISTER_[A-Z0-9_]*DISPATCH)[ \t]*\(", re.M)
_M_PASTE = re.compile(r"\s*##\s*")
_S_CLASS_AFTER = re.compile(rb"\b[^;{()]*\{")
_S_TYPE_ABOVE = re.compile(rb"[ \t]*(?!return\b|else\b|case\b|do\b)[\w:<>,*&][\w:<>,*& \t]*")
_S_META = scan.registry.scan_words(scan.ScanShape.FIRST_ARGUMENT, scan.FactKind.META_FUNC)
_S_KEYWORDS = scan.registry.scan_words(scan.ScanShape.KEYWORD)
_S_META_BEFORE = re.compile(rb"(?:%s)\s*\(\s*\Z" % scan._alternatives(_S_META))
_S_CLASS_BEFORE = re.compile(rb"\b(?:%s)\s+(?:\w+\s+)*\Z" % scan._alternatives(_S_KEYWORDS))
_OB_IDENT = re.compile(rb"[A-Za-z_]\w*")


def _line_prefixes(data: bytes) -> Iterator[bytes]:
    """Each line up to each word's start (what stands before a name on its line), and up to its end."""
    for line in data.split(b"\n"):
        yield line
        for m in _OB_IDENT.finditer(line):
            yield line[:m.start()]


def _word_ends(data: bytes) -> Iterator[tuple[bytes, int]]:
    for m in _OB_IDENT.finditer(data):
        yield data, m.end()


def _alias_inputs(data: bytes) -> Iterator[tuple[bytes, bytes]]:
    words = {m.group(1) for m in re.finditer(rb"(?:using|typedef)\s+([A-Za-z_]\w*)", data)} | {b"Tensor", b"auto"}
    for w in sorted(words):
        yield data, w


def _name_sets(data: bytes) -> Iterator[tuple[bytes, frozenset[bytes]]]:
    from collections import Counter

    counts = Counter(m.group() for m in _OB_IDENT.finditer(data))
    common = [w for w, _ in counts.most_common(300)]
    rare = sorted(counts)[::max(1, len(counts) // 50)]
    yield data, frozenset(common + rare)


def _old_declared(x):
    text, alias = x
    return [m.group(1) for m in re.finditer(rb"(?<![\w:])" + re.escape(alias) + rb"\s+([A-Za-z_]\w*)\s*[({;]", text)]


def _old_arguments(x):
    text, names = x
    if not names:
        return []
    alt = b"|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    return [(m.start(1), m.group(1).decode()) for m in re.finditer(rb"[(,]\s*(" + alt + rb")\s*(?=[,)])", text)]


_C_BRACED_OBJECT = re.compile(r"(?<![\w:])((?:\w+::)*[A-Z]\w*)\s*(?:<[^(){};]*>)?\s*\{")


def _str_lines(data: bytes) -> Iterator[str]:
    text = data.decode("utf-8", "replace")
    yield from text.split("\n")
    for at in range(0, len(text), 1000):
        yield text[at:at + 1000]


_M_STRINGIZE = re.compile(r"(?<!#)#\s*([A-Za-z_][A-Za-z0-9_]*)")  # #param


def _old_stringize(x):
    body, values = x

    def stringize(m: re.Match) -> str:
        v = values.get(m.group(1))
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"' if v is not None else m.group(0)

    return _M_STRINGIZE.sub(stringize, body)


def _macro_bodies(data: bytes) -> Iterator[tuple[str, dict[str, str]]]:
    """Each function-like #define's body with its parameters bound (to a text with a quote and a
    backslash), all or every other one."""
    for d in _all_defines(data.decode("utf-8", "replace")):
        values = {p: f'v_{p}"\\' for p in d.params}
        yield d.body, values
        yield d.body, dict(list(values.items())[::2])


def _all_defines(text: str):
    for every in macros.read_defines(text).all.values():
        yield from every

CASES = [
    Case("enclosing.control", lambda x: _group(_E_CONTROL.match(x), 1, 2), enclosing.control, _statements),
    Case("enclosing.single_if", lambda x: bool(_E_SINGLE_IF.match(x)), enclosing.single_if, _statements),
    Case("enclosing.early_return", lambda x: _group(_E_EARLY.match(x), 1), enclosing.early_return, _statements),
    Case("enclosing.function_tail", lambda x: bool(_E_FUNC_TAIL.search(x)), enclosing.function_tail, _statements),
    Case("enclosing.names_scope", lambda x: bool(_E_SCOPE.search(x)), enclosing.names_scope, _statements),
    Case("enclosing.case_label", lambda x: (lambda m: m and (m.start(1), m.end(1), m.end()))(_E_LABEL.match(x)),
         lambda x: (lambda r: r and (r[0], r[1], r[1]))(enclosing.case_label(x)), _label_texts),
    Case("enclosing.dispatch_before", lambda x: _group(_E_DISPATCH.search(x), 1), enclosing.dispatch_before, _windows),
    Case("enclosing.tokens", lambda x: list(map(len, _E_TOKEN.split(x))),
         lambda x: list(map(len, x.translate(enclosing._TOKEN_AS_SEMI).split(b";"))), lambda d: iter((d,))),
    Case("textblocks.tokens", _old_tokens, _new_tokens, lambda d: iter((mask_code(d),))),
    Case("textblocks.after_params", lambda x: bool(_T_AFTER_PARAMS.match(x)), textblocks._after_params, _heads),
    Case("textblocks.name_before", _old_name, lambda x: textblocks._name_before(*x), _before_parens),
    Case("textblocks.impl_head", _old_impl, lambda x: textblocks._impl_head(*x), _before_parens),
    Case("definitions.spec_words", lambda x: [m.group() for m in _D_SPEC.finditer(x)],
         lambda x: [w for w in x.translate(definitions._NOT_WORD).split() if w in definitions._SPEC_WORDS],
         _uncommented_statements),
    Case("preproc.code_before", lambda x: bool(_P_CODE_BEFORE.search(x)), preproc._code_before, _text_lines),
    Case("preproc.defined_name", lambda x: _group(_P_GUARD_DEFINE.match(x), 1), preproc._defined_name, _text_lines),
    Case("branches.dispatch_uses", lambda x: [(m.start(), m.end(), m.group(1)) for m in _B_DISPATCH.finditer(x)],
         branches.dispatch_uses, lambda d: iter((CODE_NOISE.sub(spaces, d),))),
    Case("calls.builtin_before", _old_builtin, lambda x: calls._builtin_before(*x), _before_words),
    Case("calls.template_names", lambda x: set(_C_TEMPLATE_PARAM.findall(x)), calls._template_names,
         lambda d: iter((d,))),
    Case("operators.tensor_declarations", lambda x: set(_O_TENSOR_DECL.findall(*x)),
         lambda x: operators._tensor_declarations(*x), _spans),
    Case("nodes.auto_init", lambda x: _group(_N_AUTO_INIT.match(x), 1), nodes.auto_init, _after_equals),
    Case("jiterator.names", lambda x: [(m.start(), m.group(1), m.group(2)) for m in _J_NAME.finditer(x)],
         jiterator._names, lambda d: iter((d,))),
    Case("jiterator.codes", lambda x: [(m.start() + m.group().index(b"jiterator_stringify"), m.group(1))
                                       for m in _J_CODE.finditer(x)], jiterator._codes, lambda d: iter((d,))),
    Case("dispatch.dispatch_uses", lambda x: [(m.start(1), m.end(), m.group(1)) for m in _DI_USE.finditer(x)],
         dispatch.dispatch_uses, lambda d: iter((d,))),
    Case("macros.paste", lambda x: _M_PASTE.sub("", x), macros._paste,
         lambda d: iter(d.decode("utf-8", "replace").split("\n"))),
    Case("scan.meta_before", lambda x: bool(_S_META_BEFORE.search(x)), lambda x: scan._meta_before(x, _S_META),
         _line_prefixes),
    Case("scan.class_before", lambda x: bool(_S_CLASS_BEFORE.search(x)),
         lambda x: scan._class_before(x, frozenset(_S_KEYWORDS)), _line_prefixes),
    Case("scan.class_after", lambda x: _S_CLASS_AFTER.match(x[0], x[1], x[1] + 4000) is not None,
         lambda x: scan._class_after(*x), _word_ends),
    Case("scan.type_line", lambda x: _S_TYPE_ABOVE.fullmatch(x) is not None, scan._is_type_line,
         lambda d: iter(d.split(b"\n"))),
    Case("objects.declared_with", _old_declared, lambda x: objects._declared_with(*x), _alias_inputs),
    Case("objects.whole_arguments", _old_arguments, lambda x: objects._whole_arguments(*x), _name_sets),
    Case("calls.braced_objects", lambda x: _C_BRACED_OBJECT.findall(x), calls.braced_objects, _str_lines),
    Case("macros.stringize", _old_stringize, lambda x: macros._stringize(*x), _macro_bodies),
]

# pieces the fuzz draws from: the words and punctuation the shapes above are made of
_PIECES = [b"if", b"else", b"switch", b"for", b"while", b"catch", b"constexpr", b"return", b"case", b"default",
           b"const", b"noexcept", b"override", b"final", b"volatile", b"&", b"&&", b"->", b"::", b":", b";",
           b"(", b")", b"{", b"}", b" ", b"\t", b"\n", b"\r", b"\x0b", b"\x0c", b"x", b"_", b"9", b"AT_DISPATCH_",
           b"AT_DISPATCH_X", b"namespace", b"class", b"struct", b"union", b"enum", b"extern", b"<", b">", b",",
           b"*", b"#", b"-", b"\xc3\xa9", b"returns", b"caseX", b"int", b"a::b", b"~", b"inline", b"mutable",
           b"TORCH_IMPL_FUNC", b"TORCH_META_FUNC2", b"TORCH_PRECOMPUTE_META_FUNC", b"static", b"__global__",
           b"C10_HOST_DEVICE", b"C10_HOST", b"__device__", b"define", b"/", b"//", b"/*", b"*/", b"A", b"Z9",
           b"\xc2\xa0", b"\xe2\x80\xa8", b"\x1c", b"\xd9\xa3", b"\xc2\xb2", b"Tensor", b"at::", b"typename",
           b"=", b"int64_t", b"size_t", b"[", b"T", b"char", b"]", b'"', b"jiterator_stringify", b"+", b"static",
           b"constexpr", b"x_name", b'"k"', b"DECLARE_DISPATCH", b"REGISTER_", b"ALSO_", b"DISPATCH", b"ops_t", b"ops",
           b"TORCH_META_FUNC", b"do", b"double", b"a"]


def _as_input(c: Case, x: bytes):
    """A fuzzed text as the case's input: str for the str readers, a window for the windowed ones."""
    if c.name == "preproc.defined_name":  # one line, as _is_guard hands it
        return x.decode("utf-8", "replace").split("\n", 1)[0]
    if c.name.startswith("preproc.") or c.name in ("macros.paste", "calls.braced_objects"):
        return x.decode("utf-8", "replace")
    if c.name in _WINDOWED:
        return (x, min(1, len(x)), len(x))
    if c.name == "scan.class_after":
        return (x, min(3, len(x)))
    if c.name == "macros.stringize":
        return (x.decode("utf-8", "replace"), {"x": 'a"\\', "x_name": "b", "a": ""})
    if c.name == "objects.declared_with":
        return (x, b"ops_t")
    if c.name == "objects.whole_arguments":
        return (x, frozenset((b"x", b"x_name", b"a", b"ops")))
    return x


_PREFIXED = {"nodes.auto_init": b"= ", "preproc.defined_name": b"#define ", "preproc.code_before": b"\n",
             "enclosing.control": b"if (", "enclosing.early_return": b"if (", "enclosing.case_label": b"case ",
             "enclosing.function_tail": b")", "textblocks.after_params": b"->", "calls.template_names": b"typename ",
             "jiterator.names": b"char ", "jiterator.codes": b"a = ",
             "macros.paste": b"##", "scan.meta_before": b"TORCH_META_FUNC(", "scan.class_before": b"struct ",
             "scan.type_line": b"void", "dispatch.dispatch_uses": b"REGISTER_X_DISPATCH(",
             "objects.declared_with": b"ops_t ", "objects.whole_arguments": b"(x",
             "calls.braced_objects": b"(at::A", "macros.stringize": b"# "}
_WINDOWED = ("textblocks.name_before", "textblocks.impl_head", "calls.builtin_before", "operators.tensor_declarations")


def _fuzz(n: int, seed: int = 0, pieces: list[bytes] = _PIECES) -> Iterator[bytes]:
    rng = random.Random(seed)
    for _ in range(n):
        yield b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 14)))


def _mutated(n: int, templates: list[list[bytes]], seed: int = 2) -> Iterator[bytes]:
    """Texts made of ``templates`` (each a shape's run of pieces), each piece kept, dropped,
    doubled or replaced by a random one: near-misses of the shape as well as the shape."""
    rng = random.Random(seed)
    for _ in range(n):
        out = []
        for t in (rng.choice(templates) for _ in range(rng.randint(1, 3))):
            for piece in t:
                r = rng.random()
                out.append(piece if r < 0.8 else b"" if r < 0.87 else piece * 2 if r < 0.92 else rng.choice(_PIECES))
        yield b"".join(out)


_TEMPLATES = {
    "jiterator.": [[b" ", b"static", b" ", b"constexpr", b" ", b"const", b"\n", b"char", b" ", b"x_name", b" ", b"[",
                    b" ", b"]", b" ", b"=", b" ", b'"', b"k9_", b'"', b" ", b";"],
                   [b"\n", b"a", b" ", b"=", b" ", b"b", b" ", b"+", b" ", b"c", b"+", b"jiterator_stringify", b" ",
                    b"("]],
}


# the few pieces of one shape, for fuzz that often has it
_SHAPES = {
    "jiterator.": [b"static", b"constexpr", b"const", b"char", b"x", b"x_name", b"[", b"]", b"=", b'"', b"k", b";",
                   b" ", b"\n", b"+", b"jiterator_stringify", b"(", b"9", b"a", b"b"],
}


def _files(trees: list[Path]) -> Iterator[bytes]:
    from atenmap.build import walk_sources

    for tree in trees:
        for rel, _lang, _size, _mtime in walk_sources(tree):
            yield (tree / rel).read_bytes()
    mini = REPO / "fixtures/pytorch-mini"
    for path in sorted(mini.rglob("*")):
        if path.is_file() and path.suffix in (".cpp", ".cu", ".h", ".cuh", ".mm"):
            yield path.read_bytes()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", type=Path, action="append", help="a PyTorch tree (default: both test trees)")
    ap.add_argument("--fuzz", type=int, default=200_000)
    ap.add_argument("--only", help="the cases whose name starts so")
    args = ap.parse_args(argv)
    cases = [c for c in CASES if not args.only or c.name.startswith(args.only)]
    files = 0
    for data in _files(args.tree or TREES):
        files += 1
        for c in cases:
            for x in c.inputs(data):
                c.check(x)
    fuzz = list(_fuzz(args.fuzz))
    for c in cases:
        real = c.count
        shape = next((v for k, v in _SHAPES.items() if c.name.startswith(k)), None)
        templates = next((v for k, v in _TEMPLATES.items() if c.name.startswith(k)), None)
        more = list(_fuzz(args.fuzz, 1, shape)) if shape else []
        more += list(_mutated(args.fuzz, templates)) if templates else []
        for x in fuzz + more:
            c.check(_as_input(c, x))
            if c.name in _PREFIXED:  # fuzz that starts as the shape does
                c.check(_as_input(c, _PREFIXED[c.name] + x))
            if c.name in _WINDOWED:
                c.check((x, 0, len(x)))
                c.check((x, 0, max(0, len(x) - 1)))
        print(f"{c.name}: {real} real inputs ({files} files), {c.count - real} fuzzed "
              f"({c.found} found something): {c.differ} differ")
    return 1 if any(c.differ for c in cases) else 0


if __name__ == "__main__":
    sys.exit(main())
