"""Names and shapes read from tree-sitter nodes and from C++ text: qualified names, template
arguments, declarators, enclosing scopes, declared types."""
from __future__ import annotations

from typing import TYPE_CHECKING

from atenmap.extract import macros

if TYPE_CHECKING:
    from atenmap.extract.treesitter import Node


def collapse_spaces(text: str) -> str:
    """Each run of whitespace as one space."""
    words = text.split()
    if not words:
        return " " if text else ""
    return (" " if text[0].isspace() else "") + " ".join(words) + (" " if text[-1].isspace() else "")


def strip_templates(text: str) -> str:
    """``at::native::gemm<float>`` -> ``at::native::gemm``; nested ``<>`` too; operators kept."""
    if "<" not in text:
        return text if " " not in text and "\n" not in text and "\t" not in text else "".join(text.split())
    text = "".join(text.split())
    text = text.replace("operator<<", "operator\x01").replace("operator<", "operator\x02")
    return _without_angles(text).replace("\x01", "<<").replace("\x02", "<")


def _without_angles(text: str) -> str:
    """Each ``<`` ... ``>`` pair removed with what it holds, innermost first (``a<b<c>>d`` -> ``ad``);
    a ``<`` or ``>`` without its partner is kept. Every ``>`` is met once, left to right: the last
    ``<`` before it is its partner (those of the ``>`` before it are gone with them)."""
    close = text.find(">")
    while close >= 0:
        open_ = text.rfind("<", 0, close)
        if open_ < 0:
            close = text.find(">", close + 1)
        else:
            text = text[:open_] + text[close + 1:]
            close = text.find(">", open_)
    return text


def last_component(qual: str) -> str:
    if "operator" in qual:
        i = qual.find("operator")
        return qual[i:]
    return qual.rsplit("::", 1)[-1]


_UPPER_FIRST = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ_")
_UPPER_REST = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"


def is_upper_name(name: str) -> bool:
    """A macro's kind of name, ``[A-Z_][A-Z0-9_]*`` (``AT_DISPATCH_CASE``, ``C10_HOST_DEVICE``): most
    names fail at their first letter."""
    return name[:1] in _UPPER_FIRST and not name.strip(_UPPER_REST)


def is_word(text: str) -> bool:
    """Not empty, and only word characters (letters, digits, ``_``: a regex's ``\\w``)."""
    return text.replace("_", "a").isalnum()


def node_text(node: Node) -> str:
    return node.text.decode("utf-8", "replace")


def split_call_args(text: str) -> list[str]:
    """Split ``(a, f<b, c>(d), e)`` at depth-0 commas."""
    text = text.strip()
    if text.startswith("(") and text.endswith(")"):
        text = text[1:-1]
    return [a for a in macros.split_args(text, angles=True) if a]


def function_declarator(decl: Node) -> Node | None:
    for _ in range(6):
        if decl is None:
            return None
        if decl.type == "function_declarator":
            return decl
        nxt = decl.child_by_field_name("declarator")
        if nxt is None:
            named = [c for c in decl.named_children if c.type.endswith("declarator")]
            nxt = named[-1] if named else None
        decl = nxt
    return None


def scope_names(node: Node, root: Node) -> tuple[list[str], list[str]]:
    """Enclosing namespaces and classes, outermost first. Walked down from the tree's ``root``:
    tree-sitter finds a node's parent by descending from the root, so walking up costs the
    square of the depth (20,000 nested #if: minutes); walking down costs the path's length."""
    ns: list[str] = []
    cls: list[str] = []
    p = root if root != node else None
    while p is not None:
        t = p.type
        if t == "namespace_definition":
            name = p.child_by_field_name("name")
            ns.append(node_text(name).replace(" ", "") if name is not None else "(anonymous namespace)")
        elif t in ("class_specifier", "struct_specifier"):
            name = p.child_by_field_name("name")
            if name is not None:
                cls.append(strip_templates(node_text(name)))
        p = p.child_with_descendant(node)
        if p == node:
            break
    return ns, cls


def template_args(node: Node) -> str:
    """``float`` of ``gemm<float>`` / ``at::cuda::blas::gemm<float>`` / ``l.launch<T, 2>``; else ''."""
    for _ in range(4):
        if node.type in ("template_function", "template_method", "template_type"):
            args = node.child_by_field_name("arguments")
            return " ".join(node_text(args)[1:-1].split()) if args is not None else ""
        if node.type == "qualified_identifier":
            node = node.child_by_field_name("name")
            if node is None:
                return ""
        elif node.type in ("field_expression", "dependent_name"):
            node = node.child_by_field_name("field") if node.type == "field_expression" else node.named_children[0]
            if node is None:
                return ""
        else:
            return ""
    return ""


WORD_BYTES = frozenset(b"_0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")  # ``c in``: a C-level test


_NOT_TYPES = {"return", "auto", "const", "else", "case", "new", "delete", "throw", "typename", "struct", "class",
              "using", "goto", "co_return", "co_await", "co_yield", "sizeof", "decltype", "static", "inline",
              "volatile", "unsigned", "signed", "int", "long", "short", "char", "bool", "float", "double", "void",
              "operator", "template", "namespace", "virtual", "explicit", "friend", "mutable", "extern", "if",
              "while", "for", "switch", "do", "constexpr", "register", "default", "public", "private", "protected"}


_WS = b" \t\n\r\x0b\x0c"  # what ``\s`` matches in bytes
_IDENT_FIRST = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")


def auto_init(after: bytes) -> bytes | None:
    """``Foo<T>`` of ``= [ns::]Foo[<T>] {`` at the start of ``after`` (the text after ``auto name``),
    blanks allowed around the name but not before its ``<``; None otherwise. String code over a
    declaration's text read back from a use; it replaced a regex of that shape (same answers on every
    declaration of both test trees and fuzz: bench/regex_equal.py)."""
    if after[:1] != b"=":
        return None
    start = end = _skip_blanks(after, 1)
    while True:
        if end >= len(after) or after[end] not in _IDENT_FIRST:
            return None
        while end < len(after) and after[end] in WORD_BYTES:
            end += 1
        if after[end:end + 2] != b"::" or after[end + 2:end + 3] == b"" or after[end + 2] not in _IDENT_FIRST:
            break
        end += 2
    if after[end:end + 1] == b"<":
        brace = end + 1
        while brace < len(after) and after[brace] not in b";{}()":
            brace += 1
        close = len(after[:brace].rstrip(_WS)) - 1
        if brace >= len(after) or after[brace] != 0x7B or close <= end or after[close] != 0x3E:
            return None
        return after[start:close + 1]
    brace = _skip_blanks(after, end)
    return after[start:end] if after[brace:brace + 1] == b"{" else None


def _skip_blanks(text: bytes, at: int) -> int:
    while at < len(text) and text[at] in _WS:
        at += 1
    return at


def type_before(text: bytes, pos: int, lo: int) -> str:
    """The declared type written right before ``pos`` (``const Foo<T>& ``), read backwards down to
    ``lo``; '' if what precedes is not a type (an operator, a keyword, a comma, the function start)."""
    i = pos
    while i > lo and text[i - 1] in b" \t\r\n&*":
        i -= 1
    end = i
    while True:
        if i > lo and text[i - 1] == 0x3E:  # '>': template arguments, balanced
            depth = 0
            while i > lo:
                c = text[i - 1]
                i -= 1
                if c == 0x3E:
                    depth += 1
                elif c == 0x3C:
                    depth -= 1
                    if depth == 0:
                        break
                elif c in b";{}()":
                    return ""
            if depth:
                return ""
            while i > lo and text[i - 1] in b" \t":
                i -= 1
        j = i
        while j > lo and text[j - 1] in WORD_BYTES:
            j -= 1
        if j == i or 0x30 <= text[j] <= 0x39:
            return ""
        i = j
        if i - 2 >= lo and text[i - 2:i] == b"::":
            i -= 2
            continue
        break
    if i > lo and text[i - 1] not in b" \t\r\n(,;{}":
        return ""
    typ = text[i:end].decode("utf-8", "replace")
    head = typ.split("<", 1)[0].strip()
    if head == "const":
        return ""
    return typ if head == "auto" or head not in _NOT_TYPES else ""
