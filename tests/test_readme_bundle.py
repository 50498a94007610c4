"""Every command of README.md's Use block answers on the bundled index, in a fresh cache, with no
tree around (what a new user has after `pip install`), and none warns that what was asked for
could not be shown (issue 21, item 4: `--why` only warned, `--backward` blamed --no-codegen)."""
from __future__ import annotations

import re
import shlex
import shutil

import pytest

from .conftest import REPO, cli_run

# Commands the bundle cannot run for reasons outside atenmap's index, each with its reason.
SKIP = {
    "trace": "runs a script of yours (train.py)",
    "open": "starts $EDITOR",
    "fetch": "downloads from the network",
    "mcp": "a server on stdio (tests/test_mcp.py talks to it on the bundle through the SDK's client)",
}
SKIP_ARGS = {"--from-trace": "needs a profiler trace file (trace.json)"}
# What a warning says when a part of the answer could not be shown (api.py, resolve/why.py,
# resolve/backward.py, resolve/chain.py), or a flag the user did not pass (issue 21).
MISSING = re.compile(r"not shown|cannot read|does not (?:hold|quote)|not in this index|no tools/autograd/derivatives"
                     r"|torchgen did not run|torchgen failed|--no-codegen|--codegen|no generated")


def readme_commands() -> list[str]:
    """The atenmap command lines of README.md's Use block: ``# comments`` and continuation lines
    dropped, optional ``[...]`` parts left out, one entry per line."""
    text = (REPO / "README.md").read_text()
    block = re.search(r"^## Use\n.*?^```sh\n(.*?)^```", text, re.S | re.M)
    assert block, "README.md has no ```sh block under ## Use"
    out = []
    for line in block.group(1).splitlines():
        code = line.split(" #", 1)[0].strip()
        if not code.startswith("atenmap "):
            continue
        out.append(re.sub(r"\s*\[[^\]]*\]", "", code))
    return out


def _skip_reason(argv: list[str]) -> str | None:
    if argv[0] in SKIP:
        return SKIP[argv[0]]
    return next((why for arg, why in SKIP_ARGS.items() if arg in argv), None)


COMMANDS = readme_commands()


def test_the_use_block_is_read():
    assert len(COMMANDS) >= 20 and "atenmap add.out --key CUDA --why" in COMMANDS
    assert "atenmap mul.Tensor --backward" in COMMANDS


@pytest.fixture
def bundle_only(tmp_path, monkeypatch):
    """A fresh cache, no tree: not --source, not $ATENMAP_SOURCE, not the cwd, nothing fetched."""
    monkeypatch.setenv("ATENMAP_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("ATENMAP_SOURCE", raising=False)
    monkeypatch.delenv("ATENMAP_NO_BUNDLE", raising=False)
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("command", COMMANDS)
def test_readme_command_answers_on_the_bundle(capsys, bundle_only, command):
    argv = shlex.split(command)[1:]
    reason = _skip_reason(argv)
    if reason:
        pytest.skip(f"{command}: {reason}")
    if "svg" in argv and shutil.which("dot") is None:
        pytest.skip(f"{command}: needs Graphviz's dot (.ci/run installs it)")
    code, out, err = cli_run(capsys, *argv, "--no-pager")
    assert code == 0, (command, err)
    written = argv[argv.index("-o") + 1] if "-o" in argv else None
    assert (bundle_only / written).stat().st_size > 0 if written else out.strip(), command
    missing = [ln for ln in err.splitlines() if MISSING.search(ln)]
    assert not missing, (command, missing)
    assert "Traceback" not in err
    if "--why" in argv:
        assert "if (" in out or "#if" in out, out[:2000]
    if "--backward" in argv and "--example" in argv:  # the node the example's output gets
        assert "output of the example on CPU: WhereBackward0" in out, out[-2000:]
    elif "--backward" in argv:
        assert "MulBackward0" in out and "mul_tensor_backward" in out, out[:2000]
