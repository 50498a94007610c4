"""Get a PyTorch source tree into the cache: ``<cache>/sources/pytorch-VERSION/``.

By default the version of the installed torch (``torch.__version__``, ``torch.version.git_version``,
read from its files without importing it), from GitHub's archive of the release tag (or of the
commit, for nightlies and source builds). ``--from`` takes another URL, a local ``.tar.gz`` /
``.tar.xz``, or ``debian`` (Debian's source packages; see ``DEBIAN``).

Note [Atomic fetch]
~~~~~~~~~~~~~~~~~~~
Nothing half-written is ever used. A download goes to ``sources/.downloads/NAME.part`` (resumed
with an HTTP Range request when a previous attempt stopped) and is renamed when complete and its
sha256 matches (when one is known); the archive is unpacked into ``sources/.unpack-XXXX/``, checked
to hold a PyTorch tree (``native_functions.yaml``) of the asked version, marked with
``.atenmap-fetch.json`` and only then renamed to ``sources/pytorch-VERSION``. A corrupt archive
is deleted (so the next attempt downloads it again); a killed fetch leaves only dot-folders,
removed by the next fetch. Fetches are serialised by ``sources/.lock``.

Also here: which fetched tree answers (``pick_fetched``, see find.find_source). The cache report
behind ``atenmap sources`` is cache.py's.
"""
from __future__ import annotations

import gzip
import hashlib
import json
import lzma
import os
import posixpath
import re
import shutil
import stat
import tarfile
import tempfile
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from atenmap import __version__, config, files
from atenmap.locks import exclusive
from atenmap.errors import AtenmapError
from atenmap.source.paths import MARKER, YAML_REL, cache_dir, is_pytorch_tree

ARCHIVE_URL = "https://github.com/pytorch/pytorch/archive/{ref}.tar.gz"
DEBIAN_MIRROR = "https://deb.debian.org/debian"
# Debian source packages: release -> (Debian version, suite, sha256 of pytorch_<v>+dfsg.orig.tar.xz).
# The checksums are those apt verified against the signed Sources index (scripts/fetch-pytorch-src).
DEBIAN = {
    "2.6.0": ("2.6.0+dfsg-7", "trixie", "099a9601bc40d67656e75735c44abedb0fbe92d08817852ab7472eebb7e6ddff"),
    "1.13.1": ("1.13.1+dfsg-4", "bookworm", "d0355588b8528566d477e6ebf1b4d9d036a6fd75711339f66b27472ce5879dc7"),
}
TIMEOUT_S = 30.0
_CHUNK = 1 << 20

Progress = Callable[[str, int, "int | None"], None]  # (phase: download|unpack, done, total)


class FetchError(AtenmapError):
    exit_code = 1


# ---- versions -----------------------------------------------------------------------------------
_VERSION = re.compile(r"^v?(?P<release>\d+\.\d+(?:\.\d+)?)(?P<pre>(?:a|b|rc)\d+)?(?P<dev>\.dev\d+)?(?:\+(?P<local>[\w.]+))?$")


@dataclass(frozen=True)
class TorchVersion:
    """``2.6.0+cu124`` -> release 2.6.0, local cu124. ``str()`` is the version without the local
    part; ``tag`` the git tag of a release (``v2.6.0``, ``v2.6.0-rc1``); a0 (how a source tree's
    version.txt spells a release branch) and .dev builds have none."""

    release: str
    pre: str = ""
    dev: str = ""
    local: str = ""

    @classmethod
    def parse(cls, text: str) -> "TorchVersion":
        m = _VERSION.match(text.strip())
        if not m:
            raise FetchError(f"not a PyTorch version: {text!r} (e.g. 2.6.0)")
        release = m["release"] if m["release"].count(".") == 2 else m["release"] + ".0"
        return cls(release, m["pre"] or "", m["dev"] or "", m["local"] or "")

    def __str__(self) -> str:
        return f"{self.release}{self.pre}{self.dev}"

    @property
    def tag(self) -> str | None:
        if self.dev:
            return None
        if self.pre.startswith("rc"):
            return f"v{self.release}-{self.pre}"
        return f"v{self.release}" if not self.pre or self.pre == "a0" else None

    @property
    def local_commit(self) -> str | None:
        """``2.6.0a0+git1eba9b3`` (a source build) -> ``1eba9b3``."""
        m = re.match(r"^git([0-9a-f]{7,40})$", self.local)
        return m[1] if m else None


@dataclass(frozen=True)
class InstalledTorch:
    version: TorchVersion
    raw: str
    commit: str | None


def installed_torch() -> InstalledTorch | None:
    """The torch installed beside atenmap, read from its metadata and ``torch/version.py``
    without importing it (that takes seconds); None when there is none."""
    from importlib import metadata, util

    try:
        raw = metadata.version("torch")
    except metadata.PackageNotFoundError:
        return None
    except Exception:  # noqa: BLE001 - a broken installation is no torch
        return None
    commit = None
    try:
        spec = util.find_spec("torch")
        for folder in (spec.submodule_search_locations or []) if spec else []:
            vf = Path(folder, "version.py")
            if vf.is_file():
                m = re.search(r"""^git_version\s*(?::\s*str\s*)?=\s*['"]([0-9a-f]{40})['"]""", vf.read_text(), re.M)
                commit = m[1] if m else None
                break
    except (ImportError, OSError, ValueError):
        commit = None
    try:
        version = TorchVersion.parse(raw)
    except FetchError:
        return None
    return InstalledTorch(version, raw, commit)


def tree_name(version: TorchVersion, commit: str | None = None) -> str:
    """Folder name under ``<cache>/sources``: ``pytorch-2.6.0``; a build that is not a release
    and is known by its commit gets the commit: ``pytorch-2.7.0.dev20250101-1eba9b3aa3c4``."""
    name = f"pytorch-{version}"
    return name if (not version.pre or version.pre.startswith("rc")) and not version.dev or not commit \
        else f"{name}-{commit[:12]}"


def _normal(v: TorchVersion, commit: str | None) -> TorchVersion:
    """``2.6.0a0`` without a commit is how a release's own tree spells it: 2.6.0."""
    return TorchVersion(v.release, dev=v.dev) if v.pre == "a0" and not commit else TorchVersion(v.release, v.pre, v.dev)


def sources_dir() -> Path:
    return cache_dir() / "sources"


def read_marker(root: Path) -> dict:
    try:
        data = json.loads(files.read_text(Path(root, MARKER), files.SMALL))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError, RecursionError):
        return {}


def fetched_trees() -> list[Path]:
    """Complete fetched trees, most recently fetched first."""
    base = sources_dir()
    if not base.is_dir():
        return []
    trees = [p for p in base.iterdir() if p.name.startswith("pytorch-") and is_pytorch_tree(p)]
    return sorted(trees, key=lambda p: (read_marker(p).get("fetched_at", 0), p.name), reverse=True)


def pick_fetched() -> Path | None:
    """The fetched tree that answers when no --source / ATENMAP_SOURCE / checkout is found: the
    one for the installed torch's version, else the most recently fetched one."""
    trees = fetched_trees()
    if not trees:
        return None
    torch = installed_torch()
    if torch is not None:
        for name in (tree_name(torch.version, torch.commit), tree_name(torch.version)):
            hit = sources_dir() / name
            if hit in trees:
                return hit
    return trees[0]


# ---- what to fetch ------------------------------------------------------------------------------
@dataclass
class Plan:
    """One fetch: where from, into which folder, what to check."""

    name: str  # folder under sources/
    version: TorchVersion | None  # None: read from the archive (--from FILE/URL without VERSION)
    origin: str  # github, url, file, debian
    url: str | None = None
    path: Path | None = None  # a local archive
    sha256: str | None = None
    tag: str | None = None
    commit: str | None = None


# Debian's orig tarball name: pytorch_1.13.1+dfsg.orig.tar.xz
_DEBIAN_FILE = re.compile(r"(?:^|/)pytorch_(\d+\.\d+\.\d+)(?:\+dfsg\d*)?\.orig\.tar\.(?:xz|gz|bz2)$")


def _debian_file_version(source: str) -> "TorchVersion | None":
    """The release a Debian file name states (``pytorch_1.13.1+dfsg.orig.tar.xz`` -> 1.13.1)."""
    m = _DEBIAN_FILE.search(source)
    return TorchVersion.parse(m[1]) if m else None


def _same_release(tree: "TorchVersion", asked: "TorchVersion") -> bool:
    """Does a tree whose version.txt says ``tree`` hold release ``asked``? Release tarballs of a
    patch release keep the branch's dev version (1.13.1's says ``1.13.0a0``): an ``a0`` of the same
    major.minor and an earlier or equal patch is that release; the package version wins."""
    if tree.release == asked.release:
        return True
    t, a = tree.release.split("."), asked.release.split(".")
    return tree.pre == "a0" and t[:2] == a[:2] and int(t[2]) <= int(a[2])


def plan(version: str | None = None, source: str | None = None, sha256: str | None = None) -> Plan:
    """Decide what ``atenmap fetch [VERSION] [--from SOURCE] [--sha256 HEX]`` does."""
    if sha256 is not None and not re.fullmatch(r"[0-9a-fA-F]{64}", sha256):
        raise FetchError(f"--sha256 {sha256!r}: expected 64 hex digits")
    sha256 = sha256.lower() if sha256 else None
    commit = None
    if version is not None:
        v = TorchVersion.parse(version)
        commit = v.local_commit
        v = _normal(v, commit)
    elif source is not None and source != "debian":
        v = _debian_file_version(source)  # else None: from the archive's version.txt
    else:
        torch = installed_torch()
        if torch is None:
            raise FetchError("no VERSION given and no torch installed beside atenmap: say which, e.g. atenmap fetch 2.6.0")
        commit = torch.commit or torch.version.local_commit
        v = _normal(torch.version, commit)

    if source == "debian":
        if v.pre not in ("", "a0") or v.dev:
            raise FetchError(f"Debian packages releases only, not {v}")
        known = DEBIAN.get(v.release)
        mirror = os.environ.get("ATENMAP_DEBIAN_MIRROR", DEBIAN_MIRROR).rstrip("/")
        url = f"{mirror}/pool/main/p/pytorch/pytorch_{v.release}+dfsg.orig.tar.xz"
        rv = TorchVersion(v.release)
        return Plan(tree_name(rv), rv, "debian", url=url, sha256=sha256 or (known[2] if known else None),
                    tag=rv.tag)
    if source is not None:
        name = tree_name(v, commit) if v else ""
        scheme = re.match(r"^([a-zA-Z][a-zA-Z0-9+.-]*)://", source)
        if scheme and scheme[1].lower() == "file":  # a local file, read as one (not through urllib)
            from urllib.parse import unquote, urlsplit

            parts = urlsplit(source)
            if parts.netloc not in ("", "localhost"):
                raise FetchError(f"--from {source}: only file:///PATH names a local file")
            source = unquote(parts.path)
        elif scheme and scheme[1].lower() not in ("http", "https"):
            raise FetchError(f"--from {source}: unsupported address ({scheme[1]}://); give an http(s) URL, a local "
                             ".tar.gz/.tar.xz file, or debian")
        elif scheme:
            return Plan(name, v, "url", url=source, sha256=sha256, tag=v.tag if v else None, commit=commit)
        path = Path(source).expanduser()
        if not path.is_file():
            raise FetchError(f"--from {source}: no such file (give a URL, a .tar.gz/.tar.xz file, or debian)")
        return Plan(name, v, "file", path=path.resolve(), sha256=sha256, tag=v.tag if v else None, commit=commit)
    ref = f"refs/tags/{v.tag}" if v.tag and not (v.pre == "a0" and commit) else commit
    if ref is None:
        raise FetchError(f"PyTorch {v} has no release tag and its git commit is unknown; "
                         "pass a release (e.g. 2.6.0) or --from URL")
    url = os.environ.get("ATENMAP_ARCHIVE_URL", ARCHIVE_URL).format(ref=ref)
    return Plan(tree_name(v, commit), v, "github", url=url, sha256=sha256, tag=v.tag, commit=commit)


# ---- fetching -----------------------------------------------------------------------------------
@dataclass
class FetchResult:
    path: Path
    reused: bool
    marker: dict = field(default_factory=dict)
    seconds: float = 0.0
    downloaded: int = 0


def fetch(p: Plan, *, force: bool = False, progress: Progress | None = None,
          status: Callable[[str], None] | None = None) -> FetchResult:
    """Fetch and unpack ``p`` into ``<cache>/sources``; see Note [Atomic fetch]."""
    t0 = time.perf_counter()
    say = status or (lambda _m: None)
    base = sources_dir()
    base.mkdir(parents=True, exist_ok=True)
    if p.name and not force and is_pytorch_tree(base / p.name):
        return FetchResult(base / p.name, True, read_marker(base / p.name))
    with exclusive(base / ".lock", say, "waiting for another atenmap fetch…"):
        if p.name and not force and is_pytorch_tree(base / p.name):
            return FetchResult(base / p.name, True, read_marker(base / p.name))
        for stale in base.glob(".unpack-*"):
            shutil.rmtree(stale, ignore_errors=True)  # left by a killed fetch; we hold the lock
        downloaded = 0
        if p.path is not None:
            archive = p.path
            if p.sha256:
                _check_sha256(archive, p.sha256, delete=False)
        else:
            missing = None
            if p.origin == "debian":
                missing = (f"PyTorch {p.version} is not in Debian's pool ({p.url} is missing; "
                           f"packaged: {', '.join(DEBIAN)}, maybe others)")
            elif p.origin == "github":
                missing = f"PyTorch {p.version}: no archive at {p.url}; is it a release (e.g. 2.6.0)?"
            archive, downloaded = download(p.url, _download_path(p), sha256=p.sha256, progress=progress, status=say,
                                           missing=missing)
        try:
            root = _install(archive, p, base, force, progress, say)
        except FetchError:
            if p.path is None:
                archive.unlink(missing_ok=True)  # a corrupt or foreign download: fetch it anew next time
            raise
        if p.path is None:
            archive.unlink(missing_ok=True)
    return FetchResult(root, False, read_marker(root), time.perf_counter() - t0, downloaded)


def _download_path(p: Plan) -> Path:
    suffix = ".tar.xz" if p.url.endswith((".xz", ".txz")) else ".tar.gz"
    key = hashlib.sha1(p.url.encode()).hexdigest()[:10]
    return sources_dir() / ".downloads" / f"{p.name or 'archive'}-{key}{suffix}"


def download(url: str, dest: Path, *, sha256: str | None = None, progress: Progress | None = None,
             status: Callable[[str], None] | None = None, missing: str | None = None) -> tuple[Path, int]:
    """Download ``url`` to ``dest`` through ``dest.part`` (resumed when present); returns the path
    and the number of bytes transferred now. ``missing``: the error message for HTTP 404."""
    import urllib.error
    import urllib.request

    say = status or (lambda _m: None)
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    if dest.exists():
        if sha256:
            _check_sha256(dest, sha256)
        return dest, 0
    start = part.stat().st_size if part.exists() else 0
    headers = {"User-Agent": f"atenmap/{__version__}"}
    if start:
        headers["Range"] = f"bytes={start}-"
    got = 0
    try:
        try:
            resp = urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=TIMEOUT_S)
        except urllib.error.HTTPError as exc:
            if exc.code == 416 and start:  # the part is already whole
                resp = None
            elif exc.code in (404, 410):
                part.unlink(missing_ok=True)
                raise FetchError(f"{missing} (HTTP {exc.code})" if missing else
                                 f"no archive at {url} (HTTP {exc.code})") from None
            else:
                raise FetchError(f"cannot download {url}: HTTP {exc.code} {exc.reason}") from None
        if resp is not None:
            with resp:
                code = getattr(resp, "status", None) or 200
                if start and code != 206:
                    start = 0  # the server ignored the range: start again
                length = resp.headers.get("Content-Length")
                total = start + int(length) if length and length.isdigit() else None
                say(f"downloading {url}" + (f" ({_mb(total)})" if total else "") + (f", resuming at {_mb(start)}" if start else ""))
                with open(part, "ab" if start else "wb") as out:
                    done = start
                    if progress:
                        progress("download", done, total)
                    while chunk := resp.read(_CHUNK):
                        out.write(chunk)
                        done += len(chunk)
                        got += len(chunk)
                        if progress:
                            progress("download", done, total)
                if total is not None and done < total:
                    raise FetchError(f"download of {url} stopped at {_mb(done)} of {_mb(total)}; "
                                     "run the same command again to resume")
    except FetchError:
        raise
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", None) or exc
        resumable = part.exists() and part.stat().st_size > 0
        raise FetchError(f"cannot download {url}: {reason} (no network?"
                         + ("; run the same command again to resume" if resumable else "") + ")") from None
    if sha256:
        _check_sha256(part, sha256)
    os.replace(part, dest)
    return dest, got


def _check_sha256(path: Path, expected: str, delete: bool = True) -> None:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    if h.hexdigest() != expected:
        if delete:
            path.unlink(missing_ok=True)
        raise FetchError(f"{path.name}: sha256 is {h.hexdigest()}, expected {expected}"
                         + (" (deleted; run again to download it anew)" if delete else ""))


def _mb(n: int | None) -> str:
    return "?" if n is None else f"{n / 1e6:.1f} MB"


class _Reader:
    """A file wrapper that reports how far the archive has been read (the unpack progress)."""

    def __init__(self, f, total: int, progress: Progress | None):
        self.f, self.total, self.progress, self.done = f, total, progress, 0

    def read(self, n: int = -1) -> bytes:
        data = self.f.read(n)
        self.done += len(data)
        if self.progress:
            self.progress("unpack", self.done, self.total)
        return data


# Note [Unpacking an archive nobody vouched for]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# tarfile's own extraction, even behind its "data" filter, has let archives write outside the
# destination (CVE-2025-4517: symlinks through long nested folders, then ``../`` chains, defeat
# the filter's realpath check). atenmap needs none of tar's features, so it uses none: every member
# is checked by ``_member_name`` and written by ``_unpack`` itself --
#   * regular files and folders only; symlinks, hardlinks, devices and FIFOs are skipped (and
#     counted), so no path inside the destination ever leads out of it;
#   * the name is normalised (``posixpath.normpath``) and must stay relative, without ``..``,
#     control characters, more than MAX_DEPTH parts, a part over 255 bytes or a whole over 4096;
#   * each file is created with ``open(..., "xb")`` (never through an existing entry), modes are
#     0644 / 0755 whatever the archive or the umask says, owners are the user's;
#   * the bytes written (and those of every member's headers, and of skipped files, which tarfile
#     reads past) and the members seen are counted against ``fetch_max_bytes`` and
#     ``fetch_max_files`` (config.py): a decompression bomb stops at the cap, with one line.
#   * tar's own header records are bounded before tarfile reads them (``_BoundedTarInfo``): a GNU
#     long name or a pax header of more than MAX_HEADER bytes, more than MAX_HEADER_CHAIN of them
#     before one member, and sparse members are refused. tarfile reads such a record whole into
#     memory (a 100 kB .tar.xz held a 1.9 GB long name) and follows a chain of them recursively.
# All of it happens in ``sources/.unpack-XXXX/``, removed on any failure.
MAX_HEADER = 1 << 20  # a real long name or pax record is a few hundred bytes
MAX_HEADER_CHAIN = 8  # a real member has at most a pax header and a long name or link before it
MAX_DEPTH = 64
MAX_PART = 255
MAX_PATH = 4096
_BAD_CHARS = re.compile(r"[\x00-\x1f\x7f]")


def _member_name(member: tarfile.TarInfo) -> tuple[str | None, str]:
    """``(safe relative name, "")`` or ``(None, why it is skipped)``."""
    if member.issym():
        return None, "symlink"
    if member.islnk():
        return None, "hardlink"
    if not (member.isreg() or member.isdir()):
        return None, "device or fifo" if (member.ischr() or member.isblk() or member.isfifo()) else "special"
    name = member.name
    if name.startswith("/") or re.match(r"^[A-Za-z]:", name):
        return None, "absolute path"
    if _BAD_CHARS.search(name):
        return None, "control character in name"
    norm = posixpath.normpath(name)
    if norm == "." and member.isdir():
        return None, "top"
    if norm in (".", "..") or norm.startswith(("../", "/")):
        return None, "outside the tree"
    parts = norm.split("/")
    if ".." in parts:
        return None, "outside the tree"
    if len(parts) > MAX_DEPTH or len(norm.encode()) > MAX_PATH or any(len(p.encode()) > MAX_PART for p in parts):
        return None, "name too long or too deep"
    return norm, ""


class _BoundedTarInfo(tarfile.TarInfo):
    """tarfile's member header with its extension records bounded; see Note [Unpacking an archive
    nobody vouched for]. FetchError passes through ``TarFile.next`` as it is."""

    def _bounded(self, tar: tarfile.TarFile, proc):
        if self.size > MAX_HEADER:
            raise FetchError(f"a tar header record of {self.size} bytes (a long name or pax header; at most "
                             f"{MAX_HEADER}); refused")
        depth = getattr(tar, "_atenmap_chain", 0)
        if depth >= MAX_HEADER_CHAIN:
            raise FetchError(f"more than {MAX_HEADER_CHAIN} tar header records before one member; refused")
        tar._atenmap_chain = depth + 1
        try:
            return proc(tar)
        finally:
            tar._atenmap_chain = depth

    def _proc_gnulong(self, tar):
        return self._bounded(tar, super()._proc_gnulong)

    def _proc_pax(self, tar):
        return self._bounded(tar, super()._proc_pax)

    def _sparse(self, *args):
        raise FetchError("a sparse file in the archive (PyTorch's archives hold none); refused")

    _proc_sparse = _proc_gnusparse_00 = _proc_gnusparse_01 = _proc_gnusparse_10 = _sparse


@dataclass
class UnpackReport:
    files: int = 0
    dirs: int = 0
    bytes: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    comment: str | None = None


def _unpack(tar: tarfile.TarFile, dest: Path, label: str, max_bytes: int, max_files: int) -> UnpackReport:
    """Write ``tar``'s regular files and folders under ``dest`` (an empty folder of ours); see
    Note [Unpacking an archive nobody vouched for]."""
    rep = UnpackReport()
    base = os.path.realpath(dest)
    made = {base}
    seen = 0

    def skip(why: str) -> None:
        rep.skipped[why] = rep.skipped.get(why, 0) + 1

    def folder(path: str) -> None:
        missing = []
        while path not in made:
            missing.append(path)
            path = os.path.dirname(path)
        for p in reversed(missing):
            try:
                os.mkdir(p, 0o755)
            except FileExistsError:
                if not stat.S_ISDIR(os.lstat(p).st_mode):
                    raise
            os.chmod(p, 0o755)
            made.add(p)

    def count(n: int) -> None:
        rep.bytes += n
        if rep.bytes > max_bytes:
            raise FetchError(f"{label} unpacks to more than {_mb(max_bytes)} (limit fetch_max_bytes / "
                             "ATENMAP_FETCH_MAX_BYTES); refused")

    for member in tar:
        seen += 1
        if seen > max_files:
            raise FetchError(f"{label} holds more than {max_files} members (limit fetch_max_files / "
                             "ATENMAP_FETCH_MAX_FILES); refused")
        count(member.offset_data - member.offset)  # its headers (long names, pax records) count too
        name, why = _member_name(member)
        if name is None:
            if why != "top":
                skip(why)
            count(member.size if member.isreg() else 0)  # tarfile reads past a skipped file's data
            continue
        target = os.path.join(base, name)
        if os.path.commonpath([base, target]) != base:  # cannot happen after _member_name; kept as the last word
            skip("outside the tree")
            continue
        try:
            if member.isdir():
                folder(target)
                rep.dirs += 1
                continue
            folder(os.path.dirname(target))
            src = tar.extractfile(member)
            with open(target, "xb") as out:
                os.fchmod(out.fileno(), 0o755 if member.mode & 0o111 else 0o644)
                while chunk := src.read(_CHUNK):
                    count(len(chunk))
                    out.write(chunk)
        except (FileExistsError, NotADirectoryError, IsADirectoryError):
            skip("duplicate or clashing name")
            continue
        try:
            os.utime(target, (member.mtime, member.mtime))
        except (OSError, OverflowError, ValueError):
            pass
        rep.files += 1
    rep.comment = tar.pax_headers.get("comment")
    return rep


def _install(archive: Path, p: Plan, base: Path, force: bool, progress: Progress | None, say) -> Path:
    say(f"unpacking {archive.name}…")
    tmp = Path(tempfile.mkdtemp(prefix=".unpack-", dir=base))
    try:
        try:
            with open(archive, "rb") as raw:
                reader = _Reader(raw, archive.stat().st_size, progress)
                with tarfile.open(fileobj=reader, mode="r|*", tarinfo=_BoundedTarInfo) as tar:
                    unpacked = _unpack(tar, tmp, archive.name, config.fetch_max_bytes(), config.fetch_max_files())
        except (tarfile.TarError, EOFError, zlib.error, lzma.LZMAError, gzip.BadGzipFile) as exc:
            raise FetchError(f"{archive.name} is not a readable tar archive ({type(exc).__name__}: {exc}); "
                             "corrupt or incomplete download") from None
        except OSError as exc:
            raise FetchError(f"cannot unpack {archive.name} into {base}: {exc.strerror or exc}") from None
        comment = unpacked.comment
        if unpacked.skipped:
            say(f"skipped {sum(unpacked.skipped.values())} archive members ("
                + ", ".join(f"{k}: {v}" for k, v in sorted(unpacked.skipped.items())) + ")")
        root = _tree_root(tmp)
        if root is None:
            raise FetchError(f"{archive.name} does not hold a PyTorch source tree (no {YAML_REL}); refused")
        tree_version = _tree_version(root)
        v = p.version
        if v is None:
            if tree_version is None:
                raise FetchError(f"{archive.name}: no version.txt in the tree; say which version it is: "
                                 "atenmap fetch VERSION --from ...")
            v = tree_version
        elif tree_version is not None and not _same_release(tree_version, v):
            raise FetchError(f"{archive.name} holds PyTorch {tree_version}, not {v}; refused")
        commit = p.commit or (comment if comment and re.fullmatch(r"[0-9a-f]{40}", comment) else None)
        if p.version is None:  # named after its version.txt (2.6.0a0 -> 2.6.0); links use the commit
            v = _normal(v, None)
        name = p.name or tree_name(v)
        marker = {"format": 1, "name": name, "version": str(v), "tag": p.tag or (v.tag if p.version is None else None),
                  "commit": commit, "origin": p.origin, "from": p.url or str(p.path),
                  "sha256": p.sha256, "fetched_at": time.time(), "atenmap_version": __version__,
                  "skipped": unpacked.skipped}
        Path(root, MARKER).write_text(json.dumps(marker, indent=1) + "\n")
        os.chmod(root / MARKER, 0o644)
        os.chmod(root, 0o755)
        dest = base / name
        if dest.exists():
            if is_pytorch_tree(dest) and not force:
                return dest  # fetched meanwhile under that name
            old = base / f".unpack-old-{os.getpid()}-{name}"
            os.replace(dest, old)
            os.replace(root, dest)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(root, dest)
        return dest
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _tree_root(tmp: Path) -> Path | None:
    if is_pytorch_tree(tmp):
        # an archive without a top folder: move its content one level down so the rename is one step
        inner = tmp / "tree"
        inner.mkdir(mode=0o755)
        for entry in list(tmp.iterdir()):
            if entry != inner:
                os.replace(entry, inner / entry.name)
        return inner
    entries = [e for e in tmp.iterdir() if not e.name.startswith("pax_global_header")]
    dirs = [e for e in entries if e.is_dir()]
    if len(dirs) == 1 and is_pytorch_tree(dirs[0]):
        return dirs[0]
    return None


def _tree_version(root: Path) -> TorchVersion | None:
    try:
        return TorchVersion.parse(files.first_line(Path(root, "version.txt")))
    except (OSError, FetchError):
        return None
