"""Which PyTorch tree answers: ``--source``, else ``ATENMAP_SOURCE``, else the checkout around the
current directory, else a tree ``atenmap fetch`` put in the cache (the installed torch's version
first, see fetch.pick_fetched), else -- for callers that accept it -- the bundled index (bundle.py;
off when ``ATENMAP_NO_BUNDLE=1``). Also where atenmap keeps its cache."""
from __future__ import annotations

import os
import re
from pathlib import Path

from atenmap import files
from atenmap.errors import SourceNotFound
from atenmap.model import SourceInfo
from atenmap.source.paths import ATEN_REL, MARKER, YAML_REL, cache_dir, is_pytorch_tree  # noqa: F401  (re-exported)

NOT_FOUND_HELP = (
    "no PyTorch source tree found: pass --source PATH (a checkout with " + YAML_REL + "), "
    "set ATENMAP_SOURCE, run atenmap inside a checkout, or get one with `atenmap fetch`"
)


def find_source(option: str | os.PathLike | None = None, cwd: Path | None = None, *,
                bundled: bool = False) -> SourceInfo:
    """``bundled``: fall back to the bundled index (origin ``bundled``, root its GitHub tree URL)
    instead of raising SourceNotFound; only for callers that read the index alone."""
    if option:
        root = Path(option).expanduser()
        if not is_pytorch_tree(root):
            raise SourceNotFound(f"--source {option}: not a PyTorch source tree (no {YAML_REL})")
        return describe(root, "option")
    env = os.environ.get("ATENMAP_SOURCE")
    if env:
        root = Path(env).expanduser()
        if not is_pytorch_tree(root):
            raise SourceNotFound(f"ATENMAP_SOURCE={env}: not a PyTorch source tree (no {YAML_REL})")
        return describe(root, "env")
    here = (cwd or Path.cwd()).resolve()
    for p in (here, *here.parents):
        if is_pytorch_tree(p):
            return describe(p, "cwd")
    from atenmap.source.fetch import pick_fetched

    fetched = pick_fetched()
    if fetched is not None:
        return describe(fetched, "fetched")
    if bundled and os.environ.get("ATENMAP_NO_BUNDLE", "") in ("", "0"):
        from atenmap.source.bundle import source_info

        info = source_info()
        if info is not None:
            return info
    raise SourceNotFound(NOT_FOUND_HELP)


def describe(root: Path, origin: str) -> SourceInfo:
    root = root.resolve()
    version = "unknown"
    try:  # only its first line counts: a huge or endless version.txt is read no further
        version = _version_text(files.first_line(root / "version.txt")) or "unknown"
    except OSError:
        pass
    commit = git_head(root) if (root / ".git").exists() else None
    if commit is None and (root / ".git").exists():  # "" (git's files are not files): git is not asked
        import subprocess

        try:
            commit = subprocess.run(
                ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5
            ).stdout.strip() or None
        except (OSError, subprocess.SubprocessError):
            commit = None
    if commit is None and (root / ".atenmap-fetch.json").is_file():  # written by `atenmap fetch`
        from atenmap.source.fetch import read_marker

        commit = read_marker(root).get("commit") or None
    if not isinstance(commit, str) or not _SHA.fullmatch(commit):
        commit = None  # "" from git_head, or anything but a commit id from git or the marker
    return SourceInfo(str(root), version, commit, origin)


MAX_VERSION = 64


def _version_text(line: str) -> str:
    """``version.txt``'s first line as a version: at most MAX_VERSION characters (a real one has
    fewer than 20), longer ones cut with ``…``. Control characters are escaped where it is shown."""
    return line if len(line) <= MAX_VERSION else line[:MAX_VERSION] + "…"


_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


def git_head(root: Path) -> str | None:
    """The commit ``git rev-parse HEAD`` prints, read from the files git keeps (``.git/HEAD``, the
    loose ref or ``packed-refs``; a worktree's ``gitdir:`` and ``commondir``), without starting git
    on every query. None for any other layout (reftable, a symbolic ref to a symbolic ref, an
    unborn branch): then git is asked. "" when one of those files is not a regular file or is
    huge (files.NotRegular, files.TooLarge): git would hang or fill memory on it, so it is not asked."""
    git = root / ".git"
    try:
        if git.is_file():  # a worktree or submodule: "gitdir: PATH"
            text = files.first_line(git)
            if not text.startswith("gitdir:"):
                return None
            git = Path(text[len("gitdir:"):].strip())
            git = git if git.is_absolute() else root / git
        head = files.first_line(git / "HEAD")
        if _SHA.fullmatch(head):
            return head
        if not head.startswith("ref: refs/"):
            return None
        ref = head[len("ref: "):]
        common = git
        if (git / "commondir").is_file():
            common = git / files.first_line(git / "commondir")
        for base in (git, common):
            if (base / ref).is_file():
                value = files.first_line(base / ref)
                return value if _SHA.fullmatch(value) else None
        if (common / "packed-refs").is_file():
            for line in files.read_text(common / "packed-refs", files.DEFAULT_LIMIT).splitlines():
                sha, _, name = line.partition(" ")
                if name == ref and _SHA.fullmatch(sha):
                    return sha
    except (files.NotRegular, files.TooLarge):
        return ""  # a FIFO or /dev/zero as .git/HEAD: git would hang on it too
    except (OSError, UnicodeError):
        return None
    return None


try:  # the same digest as hashlib.sha1, without hashlib's OpenSSL import (~3 ms on every query)
    from _sha1 import sha1 as _sha1
except ImportError:  # a Python built without its own sha1
    from hashlib import sha1 as _sha1


def index_dir(source: SourceInfo) -> Path:
    key = _sha1(source.root.encode()).hexdigest()[:16]
    return cache_dir() / "indexes" / f"{Path(source.root).name}-{key}"
