"""`atenmap fetch` with hostile archives: each archive is crafted here, in memory, around the
fixture tree, and must unpack to nothing outside the cache and nothing but files and folders.
See Note [Unpacking an archive nobody vouched for] in source/fetch.py."""
from __future__ import annotations

import io
import json
import os
import stat
import tarfile
from pathlib import Path

import pytest

from atenmap.source import fetch as F

from .conftest import FIXTURE_TREE, cli_run

TOP = "pytorch-v2.6.0"


@pytest.fixture
def cache() -> Path:
    return Path(os.environ["ATENMAP_CACHE"])


@pytest.fixture(autouse=True)
def _no_torch(monkeypatch):
    monkeypatch.setattr(F, "installed_torch", lambda: None)


def archive(tmp_path: Path, extra, *, mode: str = "w:gz", name: str = "evil.tar.gz", tree: bool = True) -> Path:
    """The fixture tree under TOP, then the members ``extra(tar)`` adds; written to ``name``."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode, format=tarfile.PAX_FORMAT) as tar:
        if tree:
            tar.add(FIXTURE_TREE, arcname=TOP)
        extra(tar)
    out = tmp_path / name
    out.write_bytes(buf.getvalue())
    return out


def add(tar: tarfile.TarFile, name: str, *, type=tarfile.REGTYPE, data: bytes = b"x", link: str = "", mode=0o644):
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.linkname = type, mode, link
    info.size = len(data) if type == tarfile.REGTYPE else 0
    tar.addfile(info, io.BytesIO(data) if type == tarfile.REGTYPE else None)


def links_in(tree: Path) -> list[str]:
    out = []
    for dirpath, dirs, files in os.walk(tree):
        for n in dirs + files:
            p = os.path.join(dirpath, n)
            st = os.lstat(p)
            if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)) or (stat.S_ISREG(st.st_mode) and st.st_nlink > 1):
                out.append(p)
    return out


def sources_left(cache: Path) -> list[str]:
    base = cache / "sources"
    return sorted(p.name for p in base.iterdir()) if base.is_dir() else []


def test_symlinks_through_long_nested_folders_cannot_escape(tmp_path, cache):
    """The CVE-2025-4517 shape: folders with 247-character names reached through one-letter
    symlinks, a symlink whose ``../`` chain only resolves outside once realpath gives up, then a
    link and a file written through it."""
    outside = tmp_path / "outside"
    outside.mkdir()
    comp = "d" * 247
    steps = "abcdefghijklmnop"

    def evil(tar):
        path = TOP
        for step in steps:
            add(tar, f"{path}/{comp}", type=tarfile.DIRTYPE, mode=0o755)
            add(tar, f"{path}/{step}", type=tarfile.SYMTYPE, link=comp)
            path = f"{path}/{comp}"
        linkpath = "/".join([TOP, *steps, "l" * 254])
        add(tar, linkpath, type=tarfile.SYMTYPE, link="../" * len(steps))
        add(tar, f"{TOP}/escape", type=tarfile.SYMTYPE,
            link=linkpath[len(TOP) + 1:] + "/" + "../" * 64 + str(outside).lstrip("/"))
        add(tar, f"{TOP}/flag", type=tarfile.LNKTYPE, link=f"{TOP}/escape/../../../../../../etc/passwd")
        add(tar, f"{TOP}/escape/pwned", data=b"owned\n")

    r = F.fetch(F.plan("2.6.0", str(archive(tmp_path, evil))))
    assert list(outside.iterdir()) == []
    assert links_in(r.path) == []
    skipped = json.loads((r.path / F.MARKER).read_text())["skipped"]
    assert skipped["symlink"] == len(steps) + 2 and skipped["hardlink"] == 1
    assert (r.path / "escape" / "pwned").read_bytes() == b"owned\n"  # a plain folder of the tree now


def test_dotdot_and_absolute_names_are_skipped(tmp_path, cache):
    target = tmp_path / "abs-target"

    def evil(tar):
        add(tar, f"{TOP}/../../../../escaped-dotdot")
        add(tar, f"{TOP}/aten/../../../escaped-mid")
        add(tar, "../escaped-top")
        add(tar, str(target))
        add(tar, f"{TOP}/fine/./ok.txt")
        add(tar, f"{TOP}/line\nbreak.txt")

    r = F.fetch(F.plan("2.6.0", str(archive(tmp_path, evil))))
    assert not target.exists()
    assert not list(cache.rglob("escaped-*")) and not list(tmp_path.rglob("escaped-*"))
    assert (r.path / "fine" / "ok.txt").is_file()
    skipped = F.read_marker(r.path)["skipped"]
    assert skipped == {"outside the tree": 3, "absolute path": 1, "control character in name": 1}


def test_hardlinks_devices_and_fifos_are_skipped(tmp_path, cache):
    secret = tmp_path / "secret"
    secret.write_text("secret\n")

    def evil(tar):
        add(tar, f"{TOP}/inside-link", type=tarfile.LNKTYPE, link=f"{TOP}/version.txt")
        add(tar, f"{TOP}/outside-link", type=tarfile.LNKTYPE, link=str(secret))
        add(tar, f"{TOP}/null", type=tarfile.CHRTYPE)
        add(tar, f"{TOP}/disk", type=tarfile.BLKTYPE)
        add(tar, f"{TOP}/pipe", type=tarfile.FIFOTYPE)

    r = F.fetch(F.plan("2.6.0", str(archive(tmp_path, evil))))
    for n in ("inside-link", "outside-link", "null", "disk", "pipe"):
        assert not os.path.lexists(r.path / n), n
    assert links_in(r.path) == [] and os.stat(secret).st_nlink == 1
    assert F.read_marker(r.path)["skipped"] == {"hardlink": 2, "device or fifo": 3}


def test_zero_bomb_refused_with_one_line(capsys, tmp_path, cache, monkeypatch):
    monkeypatch.setenv("ATENMAP_FETCH_MAX_BYTES", str(2_000_000))
    bomb = archive(tmp_path, lambda tar: add(tar, f"{TOP}/zeros", data=bytes(20_000_000)),
                   mode="w:xz", name="bomb.tar.xz")
    assert bomb.stat().st_size < 100_000
    code, out, err = cli_run(capsys, "fetch", "2.6.0", "--from", str(bomb), "--no-index")
    assert code == 1 and out == ""
    errors = [ln for ln in err.splitlines() if ln.startswith("atenmap: error")]
    assert len(errors) == 1 and "unpacks to more than 2.0 MB" in errors[0] and "refused" in errors[0]
    assert "Traceback" not in err
    assert sources_left(cache) == [".lock"]  # the half-unpacked folder is gone


def test_member_count_cap(tmp_path, cache, monkeypatch):
    monkeypatch.setenv("ATENMAP_FETCH_MAX_FILES", "50")

    def many(tar):
        for i in range(60):
            add(tar, f"{TOP}/many/{i}", type=tarfile.SYMTYPE, link="x")  # skipped members count too

    with pytest.raises(F.FetchError, match="more than 50 members"):
        F.fetch(F.plan("2.6.0", str(archive(tmp_path, many, tree=False))))
    assert sources_left(cache) == [".lock"]


def test_file_url_is_read_as_a_local_file(capsys, tmp_path, cache):
    tarball = archive(tmp_path, lambda tar: None, name="plain.tar.gz")
    p = F.plan("2.6.0", tarball.as_uri())
    assert p.origin == "file" and p.path == tarball and p.url is None
    with pytest.raises(F.FetchError, match="unsupported address"):
        F.plan("2.6.0", "ftp://example.org/x.tar.gz")
    with pytest.raises(F.FetchError, match="only file:///PATH"):
        F.plan("2.6.0", "file://otherhost/x.tar.gz")
    r = F.fetch(p)
    assert F.read_marker(r.path)["origin"] == "file"
    assert not (cache / "sources" / ".downloads").exists()


def test_modes_do_not_depend_on_the_umask_or_the_archive(tmp_path, cache):
    def modes(tar):
        add(tar, f"{TOP}/tools/run.sh", mode=0o4777)
        add(tar, f"{TOP}/secret.txt", mode=0o600)

    tarball = archive(tmp_path, modes)
    old = os.umask(0o077)
    try:
        r = F.fetch(F.plan("2.6.0", str(tarball)))
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(r.path).st_mode) == 0o755
    assert stat.S_IMODE(os.stat(r.path / "aten").st_mode) == 0o755
    assert stat.S_IMODE(os.stat(r.path / "tools" / "run.sh").st_mode) == 0o755
    assert stat.S_IMODE(os.stat(r.path / "secret.txt").st_mode) == 0o644
    assert stat.S_IMODE(os.stat(r.path / F.MARKER).st_mode) == 0o644
