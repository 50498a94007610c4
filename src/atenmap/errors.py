"""Exceptions of the library. The CLI prints ``str(exc)`` on one line and exits with ``exc.exit_code``."""
from __future__ import annotations


class AtenmapError(Exception):
    """Base class: a user-facing error with a one-line message."""

    exit_code = 1


class SourceNotFound(AtenmapError):
    exit_code = 2


class UnknownOperator(AtenmapError):
    exit_code = 1


class AmbiguousOperator(AtenmapError):
    """A bare name (``add``) that names several overloads."""

    exit_code = 1

    def __init__(self, message: str, candidates: list[str]):
        super().__init__(message)
        self.candidates = candidates


class YamlError(AtenmapError):
    """native_functions.yaml is malformed; the message names file and line."""

    exit_code = 2


class IndexError_(AtenmapError):
    """The index cannot be built or opened."""

    exit_code = 2


class UsageError(AtenmapError):
    """A request that cannot be served as asked (a bad option value, no editor set, no Graphviz): exit 2."""

    exit_code = 2
