"""Rules about the tests themselves (issue 32, item 5): every real PyTorch tree a test uses comes through
conftest's ``fetch_real_tree``, which holds the rule "with CI=true a missing tree FAILS rather than
skips" (``skip_or_fail_on_ci``). A test with a fetcher of its own (a ``subprocess`` call of
scripts/fetch-pytorch-src or of ``atenmap fetch``, a path into the test-tree cache) could skip on CI
and measure nothing; this test reads every test file's syntax tree and fails on one."""
from __future__ import annotations

import ast
import pathlib

import pytest

TESTS = pathlib.Path(__file__).resolve().parent
SUBPROCESS = {"run", "Popen", "call", "check_call", "check_output"}


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring nodes (prose may name the script; code may not)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def _strings(node: ast.AST, skip: set[int] = frozenset()) -> list[str]:
    return [n.value for n in ast.walk(node)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in skip]


def _is_subprocess_call(node: ast.AST) -> bool:
    f = node.func if isinstance(node, ast.Call) else None
    return (isinstance(f, ast.Attribute) and f.attr in SUBPROCESS
            and isinstance(f.value, ast.Name) and f.value.id == "subprocess")


def violations(path: pathlib.Path) -> list[str]:
    """What in the test file ``path`` fetches or guards a real tree outside conftest."""
    tree = ast.parse(path.read_text(), str(path))
    docs = _docstrings(tree)
    out = []
    for node in ast.walk(tree):
        where = f"{path.name}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            if "fetch-pytorch-src" in node.value or "test-trees" in node.value:
                out.append(f"{where}: names the tree fetcher / cache {node.value[:60]!r}")
        if _is_subprocess_call(node) and any("fetch" in s for s in _strings(node)):
            out.append(f"{where}: a subprocess fetcher")
    return out


def test_only_conftest_fetches_real_trees_and_reads_ci():
    files = sorted(p for p in TESTS.glob("*.py") if p.name not in ("conftest.py", pathlib.Path(__file__).name))
    assert len(files) > 50
    bad = [v for p in files for v in violations(p)]
    assert not bad, "\n".join(bad)


def test_conftest_is_where_the_fetch_and_the_ci_rule_live():
    """The checks above see what they look for: conftest itself has what they forbid elsewhere, and its
    fetcher is the one that fails on CI."""
    found = "\n".join(violations(TESTS / "conftest.py"))
    assert "names the tree fetcher" in found and "a subprocess fetcher" in found, found
    from .conftest import fetch_real_tree

    assert "skip_or_fail_on_ci" in fetch_real_tree.__code__.co_names  # the behaviour: test_truth_realtree.py


@pytest.mark.parametrize("code", [
    'subprocess.run([str(REPO / "scripts" / "fetch-pytorch-src"), "2.6.0"], capture_output=True)',
    'root = pathlib.Path.home() / ".cache/atenmap/test-trees/pytorch-2.6.0"',
    'subprocess.run([sys.executable, "-m", "atenmap", "fetch", "2.6.0"])',
])
def test_a_private_fetcher_is_caught(tmp_path, code):
    p = tmp_path / "test_x.py"
    p.write_text(f'"""Docs may say scripts/fetch-pytorch-src."""\n{code}\n')
    assert violations(p), code
