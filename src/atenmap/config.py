"""Persistent settings: the environment first, then ``config.toml``, then the defaults here.

The file is ``$XDG_CONFIG_HOME/atenmap/config.toml``, else ``~/.config/atenmap/config.toml``
(``ATENMAP_CONFIG`` names another). Keys, each also an environment variable::

    codegen = "never"            # ATENMAP_CODEGEN: never | ask | always (see codegen_mode)
    codegen_timeout = 120        # ATENMAP_CODEGEN_TIMEOUT: seconds per torchgen run
    fetch_max_bytes = 4294967296 # ATENMAP_FETCH_MAX_BYTES: an archive may unpack to this much
    fetch_max_files = 200000     # ATENMAP_FETCH_MAX_FILES: ... and hold this many members
    max_file_bytes = 8388608     # ATENMAP_MAX_FILE_BYTES: larger sources are skipped (too-large)
    fact_cache = true            # ATENMAP_FACT_CACHE: keep parsed facts by file content (build.py,
                                 # Note [Facts by content] in store/factcache.py); false / 0 / off: never
    mcp_call_seconds = 300       # ATENMAP_MCP_CALL_SECONDS: an MCP tool call's answer is stopped after this
    preview = true               # ATENMAP_PREVIEW: on a tree never indexed, a terminal first gets a
                                 # preview chain from the few files it needs (preview.py), then
                                 # the complete answer; 0/false: the complete answer only

A bad value is one clear error naming where it came from, never a silent default.
Also here, because every layer needs them: ``printable`` (control characters escaped for a
terminal) and ``confirm`` (a yes/no question, only on a terminal).
"""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from atenmap.errors import AtenmapError

CODEGEN_MODES = ("never", "ask", "always")

_DEFAULTS: dict[str, int | float | str | None] = {
    "codegen": None,  # unset: torchgen runs on a terminal, never without one (Note [Whose code runs])
    "codegen_timeout": 120.0,
    "fetch_max_bytes": 4 << 30,
    "fetch_max_files": 200_000,
    "max_file_bytes": 8 << 20,
    "fact_cache": True,
    "preview": True,
    "exact_first": False,
    "mcp_call_seconds": 300.0,
}


class ConfigError(AtenmapError):
    exit_code = 2


def config_path() -> Path:
    env = os.environ.get("ATENMAP_CONFIG")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CONFIG_HOME")
    return (Path(xdg) if xdg else Path.home() / ".config") / "atenmap" / "config.toml"


def _parse_toml(text: str, where: Path) -> dict:
    try:
        import tomllib  # 3.11+
    except ImportError:  # 3.10: the flat ``key = value`` subset this file uses
        return _parse_flat(text, where)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{where}: not valid TOML ({exc})") from None


_LINE = re.compile(r"""^\s*([A-Za-z0-9_-]+)\s*=\s*("(?:[^"\\]|\\.)*"|'[^']*'|[+-]?[0-9_.]+|true|false)\s*(?:#.*)?$""")


def _parse_flat(text: str, where: Path) -> dict:
    out: dict = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = _LINE.match(line)
        if not m:
            raise ConfigError(f"{where}:{n}: expected key = value (a string, number or true/false)")
        raw = m[2]
        if raw[0] in "\"'":
            val: object = raw[1:-1].encode().decode("unicode_escape") if raw[0] == '"' else raw[1:-1]
        elif raw in ("true", "false"):
            val = raw == "true"
        else:
            val = float(raw.replace("_", "")) if "." in raw else int(raw.replace("_", ""))
        out[m[1]] = val
    return out


def load_config() -> dict:
    """The config file's keys (empty when there is none); an unreadable or malformed file is an error."""
    path = config_path()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeError) as exc:
        raise ConfigError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    data = _parse_toml(text, path)
    unknown = sorted(set(data) - set(_DEFAULTS))
    if unknown:
        raise ConfigError(f"{path}: unknown key {unknown[0]!r} (known: {', '.join(_DEFAULTS)})")
    return data


def _raw(key: str) -> tuple[object, str]:
    env = f"ATENMAP_{key.upper()}"
    if os.environ.get(env, "") != "":
        return os.environ[env], env
    data = load_config()
    if key in data:
        return data[key], f"{config_path()} ({key})"
    return _DEFAULTS[key], "default"


def _number(key: str, kind=int) -> int | float:
    value, where = _raw(key)
    try:
        n = kind(value) if not isinstance(value, bool) else None
    except (TypeError, ValueError):
        n = None
    if n is None or n <= 0:
        raise ConfigError(f"{where}={value!r}: expected a positive number")
    return n


def codegen_mode(override: str | None = None) -> str | None:
    """``never``, ``ask`` or ``always``: the command line's ``--codegen`` (``override``), else
    ``ATENMAP_CODEGEN``, else the config file; None when nothing says (the default rule applies)."""
    return codegen_setting(override)[0]


def codegen_setting(override: str | None = None) -> tuple[str | None, str]:
    """``(codegen_mode, the setting as the user wrote it)``: ``--codegen never``,
    ``ATENMAP_CODEGEN=never``, ``codegen = "never" in PATH``; ``(None, "")`` when nothing says."""
    if override is not None:
        value, where = override, "--codegen"
    else:
        value, where = _raw("codegen")
    if value is None:
        return None, ""
    if not isinstance(value, str) or value.strip().lower() not in CODEGEN_MODES:
        raise ConfigError(f"{where}={value!r}: expected one of {', '.join(CODEGEN_MODES)}")
    mode = value.strip().lower()
    if where == "--codegen":
        return mode, f"--codegen {mode}"
    if where.startswith("ATENMAP_"):
        return mode, f"{where}={value}"
    return mode, f'codegen = "{value}" in {config_path()}'


def codegen_timeout() -> float:
    return float(_number("codegen_timeout", float))


def mcp_call_seconds() -> float:
    """The time budget of one MCP tool call's answer (cli/mcp_server.py, Note [Ending a call's work])."""
    return float(_number("mcp_call_seconds", float))


def fetch_max_bytes() -> int:
    return int(_number("fetch_max_bytes"))


def fetch_max_files() -> int:
    return int(_number("fetch_max_files"))


def max_file_bytes() -> int:
    return int(_number("max_file_bytes"))


_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def _flag(key: str) -> bool:
    value, where = _raw(key)
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower() if isinstance(value, (str, int)) else None
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ConfigError(f"{where}={value!r}: expected true or false (1/0, yes/no, on/off)")


def fact_cache() -> bool:
    """Whether builds keep and reuse parsed facts by file content (Note [Facts by content])."""
    return _flag("fact_cache")


def preview() -> bool:
    """Whether a chain asked on a terminal, on a tree never indexed, first prints the query-driven
    preview (Note [Query-driven preview] in preview.py). On unless turned off: a preview may miss
    steps but never shows one the complete answer lacks (Note [A preview never shows a wrong step])."""
    return _flag("preview")


def exact_first() -> bool:
    """Whether a chain on a tree never indexed is first answered from the files the exact pre-scan
    names for its lookups, the full index built after the answer (Note [A complete answer from the
    candidates] in exactfirst.py). Off unless turned on (``ATENMAP_EXACT_FIRST=1``): on 2.6.0 it
    parses about half the tree for ``mul.out``, one process, no faster yet than the full build
    (docs/performance.md, "Issue 37, second session")."""
    return _flag("exact_first")


# ---- terminal helpers ---------------------------------------------------------------------------
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """``text`` with control characters (newlines, ESC, bidi overrides...) written as ``\\xNN`` /
    ``\\uNNNN``, so a file name or yaml string cannot forge lines or move the cursor."""
    if not _CONTROL.search(text):
        return text
    return _CONTROL.sub(lambda m: f"\\x{ord(m[0]):02x}" if ord(m[0]) < 0x100 else f"\\u{ord(m[0]):04x}", text)


def on_terminal() -> bool:
    """Whether a person is at a terminal: stdin and stderr are both terminals. What ``confirm`` asks
    on, and what the default codegen rule needs before a tree's code runs (Note [Whose code runs])."""
    try:
        return sys.stdin.isatty() and sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def confirm(question: str) -> bool | None:
    """Ask ``question [y/N]`` on the terminal; None when stdin or stderr is not a terminal."""
    if not on_terminal():
        return None
    sys.stderr.write(f"atenmap: {question} [y/N] ")
    sys.stderr.flush()
    try:
        answer = sys.stdin.readline()
    except (OSError, KeyboardInterrupt):
        return False
    return answer.strip().lower() in ("y", "yes")
