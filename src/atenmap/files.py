"""Reading a file nobody vouched for: only a regular file, never more than a bound, never out of
its root, in a shared temp folder only the user's own.

Every read of an outside file goes through here: a tree's files (sources, the two yaml files,
``version.txt``, ``.git/HEAD`` and its refs, torchgen's inputs), the Inductor cache's output code
(inductor/outputcode.py), trace files (``open_regular``) and ``atenmap show``. A FIFO, a device or
a symlink to one is opened without blocking and refused after ``fstat`` (it would hang every
command, or be endless, like ``/dev/zero``); a file larger than the bound is refused before a byte
is read, and a file that grows while it is read stops at the bound; with ``root``, a path whose
real location is outside the root (a symlink pointing out) is refused; ``check_owner`` refuses a
cache folder in a shared place (``/tmp``) that another user owns. Every refusal is an ``OSError``,
so a caller's existing ``except OSError`` covers it. See docs/security.md.
"""
from __future__ import annotations

import errno
import heapq
import os
import stat
from pathlib import Path

# A file atenmap reads whole is at most this large unless the caller says otherwise: the largest
# file atenmap reads from a real tree is native_functions.yaml (2.6.0: 0.6 MB).
DEFAULT_LIMIT = 64 << 20
# Small files of a few words (``.git/HEAD``, a ref, ``version.txt``'s first line).
SMALL = 64 << 10


class NotRegular(OSError):
    """A FIFO, a device, a socket or a folder where a file was expected."""


class TooLarge(OSError):
    """A file over the bound the caller gave."""


class Outside(OSError):
    """A path (through a symlink) whose real location is outside the root it was found under."""


class NotOwned(OSError):
    """A folder in a place others can write to (``/tmp``) that another user owns."""


def inside(path: str | os.PathLike, root: str | os.PathLike) -> str:
    """The real path of ``path``, which must lie in the real ``root`` (``Outside`` otherwise)."""
    _no_nul(path)
    real, base = os.path.realpath(path), os.path.realpath(root)
    if real != base and not real.startswith(base.rstrip("/") + "/"):
        raise Outside(f"outside {os.fspath(root)} (a symlink out of it?): {os.fspath(path)}")
    return real


def check_owner(folder: str | os.PathLike) -> None:
    """Refuse (``NotOwned``) a folder, or a symlink naming one, that sits in a folder others may
    write to (``/tmp``: anyone can create ``/tmp/torchinductor_<you>`` first) and is not the
    user's own. A folder elsewhere is the user's choice and is not checked."""
    parent = os.stat(os.path.dirname(os.path.abspath(folder)) or "/")
    if not parent.st_mode & stat.S_IWOTH:
        return
    me = os.geteuid()
    for st in (os.lstat(folder), os.stat(folder)):
        if st.st_uid != me:
            raise NotOwned(f"{os.fspath(folder)} belongs to uid {st.st_uid}, not to you (uid {me}), "
                           "in a folder anyone can write to: not read")


def newest_files(root: str | os.PathLike, suffix: str, limit: int, scan_limit: int = 1_000_000) -> list[Path]:
    """The ``limit`` newest regular files named ``*suffix`` under ``root``, newest first. Folder
    symlinks are not followed; a file symlink counts only when its target is a regular file inside
    ``root``. At most ``scan_limit`` entries are looked at (a bound on the walk, not an order)."""
    base = os.path.realpath(root)
    found: list[tuple[int, str]] = []
    todo, seen = [os.fspath(root)], 0
    while todo and seen < scan_limit:
        try:
            it = os.scandir(todo.pop())
        except OSError:
            continue
        with it:
            for e in it:
                seen += 1
                if seen > scan_limit:
                    break
                try:
                    if e.is_dir(follow_symlinks=False):
                        todo.append(e.path)
                        continue
                    if not e.name.endswith(suffix):
                        continue
                    if e.is_symlink():
                        inside(e.path, base)
                    st = os.stat(e.path)
                except OSError:
                    continue
                if stat.S_ISREG(st.st_mode):
                    found.append((st.st_mtime_ns, e.path))
    return [Path(p) for _, p in heapq.nlargest(limit, found)]


def _no_nul(path: str | os.PathLike) -> None:
    """No file's name holds a NUL byte; Python's os calls raise ValueError for one, here an OSError
    as for any other missing file (a path an MCP client sent: the server's worker died of it)."""
    name = os.fspath(path)
    if ("\0" if isinstance(name, str) else b"\0") in name:
        raise FileNotFoundError(errno.ENOENT, "No such file or directory (a NUL byte in the name)", name)


def _open(path: str | os.PathLike) -> int:
    _no_nul(path)
    return os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0))


def read_bytes(path: str | os.PathLike, limit: int = DEFAULT_LIMIT, *, head: bool = False,
               root: str | os.PathLike | None = None) -> bytes:
    """The bytes of the regular file ``path``. Over ``limit`` bytes: ``TooLarge``, or with
    ``head`` the first ``limit`` bytes (for a file of which only the first line counts). With
    ``root``: ``Outside`` when its real location is not under ``root``."""
    fd = _open(inside(path, root) if root is not None else path)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegular(f"not a regular file: {os.fspath(path)}")
        if st.st_size > limit and not head:
            raise TooLarge(f"larger than {limit} bytes: {os.fspath(path)}")
        chunks, size = [], 0
        while size < limit and (chunk := os.read(fd, min(1 << 20, limit + 1 - size))):
            chunks.append(chunk)
            size += len(chunk)
        data = b"".join(chunks)
        if len(data) > limit:  # it grew while we read
            if not head:
                raise TooLarge(f"larger than {limit} bytes: {os.fspath(path)}")
            data = data[:limit]
        return data
    finally:
        os.close(fd)


def read_text(path: str | os.PathLike, limit: int = DEFAULT_LIMIT, *, errors: str = "strict",
              root: str | os.PathLike | None = None) -> str:
    """``read_bytes`` decoded as UTF-8 (``UnicodeDecodeError`` with ``errors="strict"``)."""
    return read_bytes(path, limit, root=root).decode("utf-8", errors)


def first_line(path: str | os.PathLike, limit: int = 4096) -> str:
    """The first non-blank line of a small text file (``version.txt``, ``.git/HEAD``), stripped,
    read from its first ``limit`` bytes only; "" when there is none."""
    text = read_bytes(path, limit, head=True).decode("utf-8", "replace").strip()
    return text.splitlines()[0].strip() if text else ""


def open_regular(path: str | os.PathLike):
    """A binary, unbuffered file object over the regular file ``path``, for a reader that streams
    (a trace of any size): opened without blocking, so a FIFO or a device is refused (``NotRegular``)
    instead of hanging; the caller bounds what it reads."""
    fd = _open(path)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegular(f"not a regular file: {os.fspath(path)}")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb", buffering=0)
    except BaseException:
        os.close(fd)
        raise
