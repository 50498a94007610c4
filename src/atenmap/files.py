"""Reading one file of a tree nobody vouched for: only a regular file, never more than a bound.

Every read of a tree's file goes through here (sources, the two yaml files, ``version.txt``,
``.git/HEAD`` and its refs, torchgen's inputs): a FIFO, a device or a symlink to one is opened
without blocking and refused after ``fstat`` (it would hang every command, or be endless, like
``/dev/zero``); a file larger than the bound is refused before a byte is read, and a file that
grows while it is read stops at the bound. Both refusals are ``OSError``s, so a caller's existing
``except OSError`` covers them. See docs/security.md.
"""
from __future__ import annotations

import os
import stat

# A file atenmap reads whole is at most this large unless the caller says otherwise: the largest
# file atenmap reads from a real tree is native_functions.yaml (2.6.0: 0.6 MB).
DEFAULT_LIMIT = 64 << 20
# Small files of a few words (``.git/HEAD``, a ref, ``version.txt``'s first line).
SMALL = 64 << 10


class NotRegular(OSError):
    """A FIFO, a device, a socket or a folder where a file was expected."""


class TooLarge(OSError):
    """A file over the bound the caller gave."""


def _open(path: str | os.PathLike) -> int:
    return os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0))


def read_bytes(path: str | os.PathLike, limit: int = DEFAULT_LIMIT, *, head: bool = False) -> bytes:
    """The bytes of the regular file ``path``. Over ``limit`` bytes: ``TooLarge``, or with
    ``head`` the first ``limit`` bytes (for a file of which only the first line counts)."""
    fd = _open(path)
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


def read_text(path: str | os.PathLike, limit: int = DEFAULT_LIMIT, *, errors: str = "strict") -> str:
    """``read_bytes`` decoded as UTF-8 (``UnicodeDecodeError`` with ``errors="strict"``)."""
    return read_bytes(path, limit).decode("utf-8", errors)


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
