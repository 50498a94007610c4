"""The string code that replaced extract/'s regexes answers as they did (issue 32: regexes only where
tree-sitter cannot see): bench/regex_equal.py's cases, each old regex against its new function, on
every input the fixture tree gives and a little fuzz. The whole proof (both test trees, 200k fuzzed
texts a case) is the bench's own run."""
from __future__ import annotations

import sys

import pytest

from .conftest import REPO

sys.path.insert(0, str(REPO / "bench"))
import regex_equal  # noqa: E402  bench/regex_equal.py


@pytest.mark.parametrize("case", regex_equal.CASES, ids=lambda c: c.name)
def test_new_code_answers_as_the_old_regex(case):
    for data in regex_equal._files([]):  # the fixture tree (pytorch-mini)
        for x in case.inputs(data):
            case.check(x)
    for x in regex_equal._fuzz(500):
        case.check(regex_equal._as_input(case, x))
    assert case.count and not case.differ, f"{case.differ} of {case.count} inputs differ"


def test_the_remaining_regexes_of_extract_say_why():
    """Every re.compile left in extract/ has its reason in a comment on the lines just above it."""
    reasons = ("not a query", "Not a query")
    for path in sorted((REPO / "src/atenmap/extract").glob("*.py")):
        lines = path.read_text().splitlines()
        for i, line in enumerate(lines):
            if "re.compile(" in line:
                above = " ".join(lines[max(0, i - 3):i + 1])
                assert any(r in above for r in reasons), f"{path.name}:{i + 1}: a regex without its reason"
