"""Property tests (hypothesis) for what atenmap reads from trees nobody vouched for: the yaml parser,
the C++/CUDA extractor, archives, the index and the chain built on generated and mutated trees, the
kernel-name parser, the Index verbs and the CLI.

The properties: every fault is an ``AtenmapError`` with a one-line message (never another exception,
never a traceback); the extractor never raises and its lines lie inside the file; yaml round-trips,
or is refused naming ``file:line``; an archive writes nothing outside its folder and nothing but
files and folders; a chain on any tree points only at lines that exist.

Also (issue 23): yaml aliases against an oracle that expands them, every output format (text,
json, lines, gdb, dot, mermaid, the CLI's) fed hostile strings, and the trace reader.

Bounded for CI: the whole file runs in about a minute on 2 cores (``ATENMAP_FUZZ_SCALE=10``
runs ten times the examples, ``ATENMAP_FUZZ_CASES=10000`` that many for every property, e.g.
with ``-k 'yaml or hostile or control or kernel_names'``). No example database is written
(``database=None``)."""
from __future__ import annotations

import io
import os
import pathlib
import shutil
import stat
import tarfile
import tempfile

import pytest
import yaml
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from atenmap.errors import AtenmapError, YamlError
from atenmap.extract.native_yaml import parse_operators
from atenmap.extract.parse import extract_file
from atenmap.model import OperatorName
from atenmap.resolve.kernelname import parse_kernel_name
from atenmap.source import fetch as F

from .conftest import FIXTURE_TREE, cli_run

SCALE = float(os.environ.get("ATENMAP_FUZZ_SCALE", "1"))
CASES = int(os.environ.get("ATENMAP_FUZZ_CASES", "0"))  # every property this many cases (the 10^4 run)


def fuzz(n: int, **kw):
    return settings(max_examples=CASES or max(1, int(n * SCALE)), deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture], **kw)


def one_line(exc: BaseException) -> None:
    text = str(exc)
    assert isinstance(exc, AtenmapError), f"{type(exc).__name__}: {text}"
    assert text and "\n" not in text and "Traceback" not in text, repr(text)


_FIRST = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_"
IDENT = st.tuples(st.sampled_from(_FIRST), st.text(_FIRST + "0123456789", max_size=10)).map("".join)

# ---- operator names -----------------------------------------------------------------------------


@fuzz(300)
@given(st.tuples(IDENT, st.one_of(st.just(""), IDENT)))
def test_operator_names_round_trip(parts):
    name, overload = parts
    text = f"{name}.{overload}" if overload else name
    parsed = OperatorName.parse(text)
    assert (parsed.name, parsed.overload) == (name, overload) and str(parsed) == text
    assert OperatorName.parse(f"aten::{text}") == parsed


@fuzz(300)
@given(st.text(max_size=40))
def test_operator_name_parse_accepts_or_refuses_in_one_line(text):
    try:
        parsed = OperatorName.parse(text)
    except Exception as exc:  # noqa: BLE001 - the property: only AtenmapError, in one line
        one_line(exc)
    else:
        assert OperatorName.parse(str(parsed)) == parsed


# ---- native_functions.yaml ----------------------------------------------------------------------

KEYS = ["CPU", "CUDA", "MPS", "Meta", "SparseCPU", "QuantizedCPU", "CompositeExplicitAutograd",
        "CompositeImplicitAutograd", "NestedTensorCPU"]


KERNEL = IDENT.filter(lambda s: yaml.safe_load(s) == s)  # not `no`, `on`, `null`: yaml 1.1 reads those as values


@st.composite
def yaml_entry(draw):
    name = draw(IDENT.filter(lambda s: not s.startswith("_") or len(s) > 1))
    overload = draw(st.one_of(st.just(""), IDENT))
    out = draw(st.booleans())
    args = "Tensor self, *, Tensor(a!) out" if out else "Tensor self"
    ret = "Tensor(a!)" if out else "Tensor"
    dispatch = draw(st.dictionaries(st.sampled_from(KEYS), KERNEL, max_size=4))
    lines = [f"- func: {name}{'.' + overload if overload else ''}({args}) -> {ret}"]
    extra = draw(st.lists(st.sampled_from(["  variants: function, method", "  device_check: NoCheck",
                                           "  tags: pointwise", "  tags: [core, pointwise]",
                                           "  manual_cpp_binding: True", "  python_module: nn"]),
                          unique=True, max_size=3))
    lines += extra
    if dispatch:
        lines.append("  dispatch:")
        lines += [f"    {k}: {v}" for k, v in dispatch.items()]
    comments = draw(st.lists(st.sampled_from(["", "# a comment", "  # indented comment"]), max_size=2))
    return OperatorName(name, overload), dispatch, lines + comments


@st.composite
def yaml_file(draw):
    entries = draw(st.lists(yaml_entry(), max_size=8, unique_by=lambda e: str(e[0])))
    header = draw(st.sampled_from([[], ["# generated for a test"], ["", ""]]))
    lines, starts = list(header), []
    for name, dispatch, body in entries:
        starts.append(len(lines) + 1)
        lines += body
    return entries, starts, "\n".join(lines) + "\n"


@fuzz(60)
@given(yaml_file())
def test_yaml_round_trips_names_lines_and_dispatch(doc):
    entries, starts, text = doc
    ops = parse_operators(text, "nf.yaml")
    assert [op.name for op in ops] == [e[0] for e in entries]
    assert [op.loc.line for op in ops] == starts
    assert all(text.splitlines()[op.loc.line - 1].startswith("- func: ") for op in ops)
    for op, (_, dispatch, _) in zip(ops, entries):
        explicit = {d.key: d.kernel for d in op.dispatch if d.key in dispatch}
        assert explicit == dispatch


@fuzz(60)
@given(yaml_file(), st.data())
def test_yaml_refusals_name_the_entry_line(doc, data):
    entries, starts, text = doc
    assume(entries)
    lines = text.splitlines()
    i = data.draw(st.integers(0, len(entries) - 1))
    how = data.draw(st.sampled_from(["unknown key", "duplicate", "bad name", "no func"]))
    if how == "unknown key":
        lines.insert(starts[i], "  no_such_key: 1")
        want = starts[i]
    elif how == "duplicate":
        lines.append(entries[i][2][0])
        want = len(lines)
    elif how == "bad name":
        lines[starts[i] - 1] = "- func: 1bad(Tensor self) -> Tensor"
        want = starts[i]
    else:
        lines[starts[i] - 1] = "- variants: function"
        want = starts[i]
    with pytest.raises(YamlError) as exc:
        parse_operators("\n".join(lines) + "\n", "nf.yaml")
    one_line(exc.value)
    assert str(exc.value).startswith(f"nf.yaml:{want}:"), (how, str(exc.value))


YAML_BITS = ["- func: ", "add", ".out", "(Tensor self)", " -> Tensor", "\n", "\n  ", "dispatch:", "CPU: ",
             "self: ", "grad", "!0", "!!int ", "!!bool ", "!!float ", "!!binary ", "<<: ", "&b", "*b",
             "structured: True", "structured_delegate: ", ":", "- ", "[", "]", "{", "}", "'", '"', "&a", "*a",
             "!!python/object:os.system", "%YAML 1.1", "---", "\t", "#", "é", "\x00", "\ufeff", "?", "|", ">"]


@fuzz(400)
@example("\x1f")  # PyYAML's reader error was two lines ('  in "<unicode string>", position 0'), with no line
@example("- func: a(Tensor self) -> Tensor\n  dispatch:\n    CPU: no\n")  # yaml 1.1: `no` is False
@example("- 0: !0")  # the 10^4 run: a tag no constructor knows was a message of two lines
@example("- name: a(Tensor self) -> Tensor\n  self: !!int abc\n")  # ... and a ValueError traceback
@example("- 0: !!int")  # an IndexError
@example("- 0: !!timestamp")  # an AttributeError
@given(st.one_of(st.text(max_size=200), st.lists(st.sampled_from(YAML_BITS), max_size=40).map("".join)))
def test_any_yaml_text_parses_or_is_refused_in_one_line(text):
    from atenmap.extract.derivatives_yaml import parse_derivatives

    try:
        ops = parse_operators(text, "nf.yaml")
    except Exception as exc:  # noqa: BLE001 - the property: only AtenmapError, in one line
        one_line(exc)
        assert str(exc).startswith("nf.yaml")
    else:
        assert len({str(op.name) for op in ops}) == len(ops)
    try:
        parse_derivatives(text.replace("func:", "name:"), "d.yaml")
    except Exception as exc:  # noqa: BLE001 - the same property for derivatives.yaml
        one_line(exc)
        assert str(exc).startswith("d.yaml")


# ---- the extractor -------------------------------------------------------------------------------

CPP_BITS = ["namespace at { namespace native {", "}", "{", "(", ")", ";", "\n", " ", "void ", "f", "g", "::",
            "template <typename T>", "<", ">", "TORCH_IMPL_FUNC(add_out)", "TORCH_META_FUNC(add)",
            "DECLARE_DISPATCH(fn, add_stub);", "DEFINE_DISPATCH(add_stub);", "REGISTER_DISPATCH(add_stub, &k);",
            "REGISTER_CUDA_DISPATCH(", "__global__ ", "k<<<1, 2>>>(x);", "<<<", ">>>", "gpu_kernel(iter, f);",
            "#if defined(USE_ROCM)", "#else", "#endif", "#define M(x) x", "M(", "\\\n", "/*", "*/", "//", '"',
            "'", "R\"(", ")\"", "[&]", "auto", "return", "struct S {", "};", "TORCH_LIBRARY_IMPL(aten, CPU, m) {",
            'm.impl("add.out", TORCH_FN(f));', "é", "\t", "\r\n", "AT_DISPATCH_ALL_TYPES(t, \"n\", [&] {", "});"]


def check_facts(src: bytes, facts) -> None:
    nlines = src.count(b"\n") + 1
    for f in facts:
        assert 1 <= f.line <= f.end_line <= nlines, (f, nlines)
        assert -1 <= f.scope < len(facts)
        assert isinstance(f.name, str) and isinstance(f.qual, str)


@fuzz(150)
@given(st.lists(st.sampled_from(CPP_BITS), max_size=60).map("".join), st.sampled_from(["cpp", "cuda"]))
def test_extractor_never_raises_and_lines_lie_in_the_file(text, lang):
    src = text.encode()
    has_error, facts = extract_file(src, lang)
    assert isinstance(has_error, bool)
    check_facts(src, facts)


@fuzz(100)
@given(st.text(max_size=300).map(str.encode), st.sampled_from(["cpp", "cuda"]))
def test_extractor_on_any_text(src, lang):
    """Any UTF-8 text (NUL, control characters, surrogates' neighbours...); non-UTF-8 bytes the
    build skips before parsing (counted as not-utf8)."""
    _, facts = extract_file(src, lang)
    check_facts(src, facts)


@fuzz(60)
@given(st.sampled_from(sorted(p.relative_to(FIXTURE_TREE).as_posix() for p in FIXTURE_TREE.rglob("*")
                              if p.suffix in (".cpp", ".cu", ".cuh", ".h"))), st.data())
def test_extractor_on_mutated_fixture_files(rel, data):
    lines = (FIXTURE_TREE / rel).read_bytes().split(b"\n")
    lines = mutate(lines, data)
    src = b"\n".join(lines)
    _, facts = extract_file(src, "cuda" if rel.endswith((".cu", ".cuh")) else "cpp")
    check_facts(src, facts)


def mutate(lines: list[bytes], data) -> list[bytes]:
    """A few edits of a file's lines: cut, duplicate, swap, junk inserted, cut mid-line."""
    lines = list(lines)
    for _ in range(data.draw(st.integers(1, 4))):
        n = len(lines)
        i = data.draw(st.integers(0, max(n - 1, 0)))
        j = data.draw(st.integers(i, min(n, i + 8)))
        how = data.draw(st.sampled_from(["cut", "dup", "swap", "junk", "trunc"]))
        if how == "cut":
            del lines[i:j]
        elif how == "dup":
            lines[i:i] = lines[i:j]
        elif how == "swap" and j < n:
            lines[i], lines[j] = lines[j], lines[i]
        elif how == "junk":
            lines.insert(i, data.draw(st.lists(st.sampled_from(CPP_BITS), max_size=6).map("".join)).encode())
        elif how == "trunc" and i < n:
            lines[i] = lines[i][: data.draw(st.integers(0, len(lines[i])))]
    return lines


# ---- archives ------------------------------------------------------------------------------------

SEGMENTS = ["..", ".", "a", "b", "pytorch", "x" * 120, "", "c.txt"]
MEMBER_TYPES = [tarfile.REGTYPE, tarfile.DIRTYPE, tarfile.SYMTYPE, tarfile.LNKTYPE, tarfile.CHRTYPE,
                tarfile.FIFOTYPE]


@st.composite
def member(draw):
    parts = draw(st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=6))
    name = ("/" if draw(st.booleans()) and draw(st.booleans()) else "") + "/".join(parts)
    kind = draw(st.sampled_from(MEMBER_TYPES))
    link = "/".join(draw(st.lists(st.sampled_from(SEGMENTS + ["/tmp", "/etc/passwd"]), max_size=4)))
    return name, kind, link, draw(st.binary(max_size=20))


@fuzz(60)
@given(st.lists(member(), max_size=12))
def test_archives_write_only_files_and_folders_inside_their_folder(members):
    with tempfile.TemporaryDirectory() as sandbox:
        box = pathlib.Path(sandbox)
        dest = box / "sources" / "tree"
        dest.mkdir(parents=True)
        (box / "outside.txt").write_text("keep")
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for name, kind, link, data in members:
                info = tarfile.TarInfo(name)
                info.type, info.linkname, info.mode = kind, link, 0o777
                info.size = len(data) if kind == tarfile.REGTYPE else 0
                tar.addfile(info, io.BytesIO(data) if kind == tarfile.REGTYPE else None)
        buf.seek(0)
        try:
            with tarfile.open(fileobj=buf, mode="r|*") as tar:
                F._unpack(tar, dest, "evil.tar", max_bytes=10_000, max_files=100)
        except Exception as exc:  # noqa: BLE001 - the property: a refusal is an AtenmapError in one line
            one_line(exc)
        outside = sorted(p.relative_to(box).as_posix() for p in box.rglob("*") if dest not in (p, *p.parents))
        assert outside == ["outside.txt", "sources"] and (box / "outside.txt").read_text() == "keep"
        for dirpath, dirs, files in os.walk(dest):
            for n in dirs + files:
                st_ = os.lstat(os.path.join(dirpath, n))
                assert stat.S_ISDIR(st_.st_mode) or (stat.S_ISREG(st_.st_mode) and st_.st_nlink == 1), n
                assert not st_.st_mode & 0o022  # never group/world-writable, whatever the archive says


# ---- the index and the chain on generated and mutated trees --------------------------------------

CPP_SUFFIXES = (".cpp", ".cu", ".cuh", ".h")


def lines_of(root: pathlib.Path, rel: str) -> int:
    return (root / rel).read_bytes().count(b"\n") + 1


def assert_chains_point_at_real_lines(ix, root: pathlib.Path) -> int:
    """Every step of every operator's chain (every key) names a file of the tree (or of the codegen
    output) and a line inside it; yaml steps stand on their ``- func:`` line. How many steps."""
    yaml_rel = "aten/src/ATen/native/native_functions.yaml"
    yaml_lines = (root / yaml_rel).read_text().splitlines()
    n = 0
    for op in ix.operators():
        chain = ix.chain(op)
        for kc in chain.keys:
            for s in kc.walk():
                n += 1
                if s.loc is None:
                    continue
                path = pathlib.Path(s.file) if s.file.startswith("/") else root / s.file
                assert path.is_file(), s
                assert 1 <= s.line <= path.read_bytes().count(b"\n") + 1, s
                if s.role == "yaml":
                    assert s.file == yaml_rel and yaml_lines[s.line - 1].startswith("- func:"), s
    return n


@pytest.fixture(scope="module")
def fixture_files():
    return sorted(p.relative_to(FIXTURE_TREE).as_posix() for p in FIXTURE_TREE.rglob("*") if p.suffix in CPP_SUFFIXES)


@fuzz(10)
@given(st.data())
def test_index_and_chain_on_mutated_trees_point_at_real_lines(fixture_files, data):
    from atenmap.api import Index

    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp) / "pytorch"
        shutil.copytree(FIXTURE_TREE, root)
        with Index.open(root, codegen=False) as ix:
            assert assert_chains_point_at_real_lines(ix, root) > 0
        for rel in data.draw(st.lists(st.sampled_from(fixture_files), min_size=1, max_size=4, unique=True)):
            path = root / rel
            old = path.stat().st_mtime_ns
            path.write_bytes(b"\n".join(mutate(path.read_bytes().split(b"\n"), data)))
            os.utime(path, ns=(old + 10**9, old + 10**9))  # the refresh's stat walk sees every edit
        with Index.open(root, codegen=False) as ix:  # refreshed for the edited files only
            assert_chains_point_at_real_lines(ix, root)


@st.composite
def generated_tree(draw):
    """(yaml text, {path: text}): operators with CPU/CUDA kernels, native functions, stubs and
    launches in a few files, some pieces missing, junk lines between them."""
    names = draw(st.lists(IDENT.map(str.lower), min_size=1, max_size=5, unique=True))
    yaml_lines, files = [], {}
    for n in names:
        yaml_lines += [f"- func: {n}(Tensor self) -> Tensor", "  dispatch:", f"    CPU: {n}_cpu",
                       f"    CUDA: {n}_cuda"]
    for n in names:
        pieces = {
            "aten/src/ATen/native/Ops.cpp": [
                f"Tensor {n}_cpu(const Tensor& self) {{ {n}_stub(kCPU, self); return self; }}",
                f"Tensor {n}_cuda(const Tensor& self) {{ {n}_stub(kCUDA, self); return self; }}",
                f"DEFINE_DISPATCH({n}_stub);"],
            "aten/src/ATen/native/Ops.h": [f"DECLARE_DISPATCH(fn, {n}_stub);"],
            "aten/src/ATen/native/cpu/OpsKernel.cpp": [
                f"static void {n}_kernel(TensorIterator& iter) {{ cpu_kernel(iter, [](float a) {{ return a; }}); }}",
                f"REGISTER_DISPATCH({n}_stub, &{n}_kernel);"],
            "aten/src/ATen/native/cuda/OpsKernel.cu": [
                f"__global__ void {n}_global(float* x) {{ x[0] = 0; }}",
                f"void {n}_kernel_cuda(TensorIterator& iter) {{ {n}_global<<<1, 32>>>(nullptr); }}",
                f"REGISTER_DISPATCH({n}_stub, &{n}_kernel_cuda);"],
        }
        for path, body in pieces.items():
            kept = [ln for ln in body if draw(st.integers(0, 5)) > 0]  # now and then a piece is missing
            files.setdefault(path, []).extend(kept)
    out = {}
    for path, body in files.items():
        text = []
        for ln in body:
            text += draw(st.lists(st.sampled_from(["", "// note", "#if defined(USE_ROCM)", "#endif", "int x;"]),
                                  max_size=2))
            text.append(ln)
        out[path] = "namespace at { namespace native {\n" + "\n".join(text) + "\n}}\n"
    return "\n".join(yaml_lines) + "\n", out


@fuzz(10)
@given(generated_tree())
def test_index_and_chain_on_generated_trees_point_at_real_lines(tree):
    from atenmap.api import Index

    yaml_text, files = tree
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp) / "pytorch"
        (root / "aten/src/ATen/native").mkdir(parents=True)
        (root / "aten/src/ATen/native/native_functions.yaml").write_text(yaml_text)
        (root / "version.txt").write_text("2.6.0a0\n")
        for rel, text in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
        with Index.open(root, codegen=False) as ix:
            assert assert_chains_point_at_real_lines(ix, root) > 0
            for kc in ix.chain(ix.operators()[0], keys=["CUDA"]).keys:
                for s in kc.walk():
                    if s.role == "launch":  # a launch step stands on its <<< line
                        assert "<<<" in (root / s.file).read_text().splitlines()[s.line - 1]


# ---- the verbs and the CLI on any input ----------------------------------------------------------

NAMES = ["add.out", "mul.Tensor", "add", "torch.add", "F.relu", "Tensor.add_", "aten::add.out", "torch.ops.aten.mul.out",
         "softmax", "", " ", "a.b.c", "add.", "..", "%", "_", "*", "é", "\x1b[31m", "a" * 300]


@fuzz(150)
@given(st.one_of(st.sampled_from(NAMES), st.text(max_size=30)))
def test_verbs_answer_or_refuse_in_one_line(mini_index, text):
    for verb in (mini_index.lookup, mini_index.chain, mini_index.kernel, mini_index.search):
        try:
            verb(text)
        except Exception as exc:  # noqa: BLE001 - the property: only AtenmapError, in one line
            one_line(exc)
    try:
        mini_index.where(text or "x", line=len(text) or None)
    except Exception as exc:  # noqa: BLE001
        one_line(exc)


@fuzz(300)
@given(st.one_of(st.text(max_size=80), st.lists(st.sampled_from(
    ["void ", "at::native::", "k", "<", ">", "(", ")", ",", "float", "{lambda(float)#1}", "_Z", "N2at6native",
     "::", " ", "[clone .kd]", "(anonymous namespace)", "std::array<char*, 3ul>", "unsigned", "&", "*"]),
    max_size=30).map("".join)))
def test_kernel_names_parse_or_refuse_in_one_line(text):
    try:
        k = parse_kernel_name(text)
    except Exception as exc:  # noqa: BLE001 - the property: only AtenmapError, in one line
        one_line(exc)
    else:
        assert isinstance(k.function, str) and isinstance(k.kind, str)


ARGS = ["chain", "ops", "where", "search", "kernel", "lines", "graph", "gdb", "sources", "add.out", "mul.Tensor",
        "softmax", "--key", "CUDA", "CPU", "all", "NoSuchKey", "--json", "--format", "text", "lines", "dot", "xml",
        "--limit", "0", "3", "-1", "--depth", "40", "--wide", "--link", "github", "local", "none", "--no-expand",
        "aten/src/ATen/native/cuda/Loops.cuh", "gpu_kernel", "-h", "--", "-", "é", "\x1b]8;;x\x1b\\"]


@fuzz(40)
@given(st.lists(st.one_of(st.sampled_from(ARGS), st.text(max_size=8)), max_size=7))
def test_cli_never_shows_a_traceback(capsys, args):
    assume(not any(a.startswith(("-o", "--out", "--output")) for a in args))  # writes files: other tests
    code, out, err = cli_run(capsys, *args, "--source", str(FIXTURE_TREE), "--no-codegen")
    assert code in (0, 1, 2), (args, code, err)
    assert "Traceback" not in err and "Traceback" not in out
    errors = [ln for ln in err.splitlines() if ln.startswith("atenmap: error")]
    assert len(errors) <= 1, err


# ---- yaml aliases: the composer's bound (Note [Bounded yaml]) ------------------------------------


@st.composite
def alias_yaml(draw):
    """An entry whose list values are built from anchors and aliases of earlier (or the same, or
    later: a cycle or an unknown alias) anchors, nested, with merge keys now and then."""
    n = draw(st.integers(1, 7))
    values = []
    for i in range(n):
        refs = draw(st.lists(st.integers(0, n), min_size=1, max_size=9))
        items = [f"*a{r}" if draw(st.booleans()) else "[" + f"*a{r}" + "]" for r in refs]
        if draw(st.integers(0, 5)) == 0:
            items.append("x")
        values.append(f"&a{i} [" + ", ".join(items) + "]")
    key = draw(st.sampled_from(["cpp_no_default_args", "precomputed", "tags", "variants", "dispatch"]))
    body = f"- func: a(Tensor self) -> Tensor\n  {key}: [" + ", ".join(values) + "]\n"
    if draw(st.booleans()):
        body += "- func: b(Tensor self) -> Tensor\n  dispatch: &m {CPU: k, <<: *m}\n"
    return body


def _expanded(node, stack=()):
    """The node count and depth of ``node`` with every alias expanded, or None for a cycle (the
    oracle for check_graph: plain recursion, fine on the small graphs drawn here)."""
    if any(node is s for s in stack):
        return None
    kids = [k for pair in node.value for k in pair] if isinstance(node, yaml.MappingNode) else \
        node.value if isinstance(node, yaml.SequenceNode) else []
    size, depth = 1, 0
    for k in kids:
        sub = _expanded(k, (*stack, node))
        if sub is None:
            return None
        size, depth = size + sub[0], max(depth, sub[1])
        if size > 10**7:
            return size, depth + 1
    return size, depth + 1


@fuzz(150)
@given(alias_yaml())
def test_yaml_aliases_are_bounded_exactly(text):
    from atenmap.extract import native_yaml as N
    from atenmap.extract.derivatives_yaml import parse_derivatives

    try:
        top = N._Loader(text).get_single_node()
    except yaml.YAMLError:
        top = None  # an unknown alias: composing fails, the parser says so in one line
    want = None if top is None else _expanded(top)
    for parse, t in ((parse_operators, text), (parse_derivatives, text.replace("- func:", "- name:"))):
        try:
            parse(t, "nf.yaml")
        except Exception as exc:  # noqa: BLE001 - the property: only AtenmapError, in one line
            one_line(exc)
            msg = str(exc)
            if top is not None and want is None:
                assert "an alias refers to a node that contains it" in msg, msg
            elif top is not None and (want[0] > N.MAX_YAML_NODES or want[1] > N.MAX_YAML_DEPTH):
                assert "once its aliases are expanded" in msg or "deeper than" in msg, msg
            else:
                assert "aliases are expanded" not in msg and "contains it" not in msg, msg
        else:
            assert want is not None and want[0] <= N.MAX_YAML_NODES and want[1] <= N.MAX_YAML_DEPTH


# ---- every output format fed hostile strings -----------------------------------------------------

HOSTILE = st.one_of(st.text(max_size=20), st.sampled_from(
    ["\x1b]0;title\x07", "\x1b[2J", "a\nb", "\r", "\u202e", "\x9b31m", '"', "\\", "<b>", "|x|", "]]", "#quot;",
     "\x00", "\u2028", "`", "';--", "%s", "{}"]))
_CONTROL_OUT = __import__("re").compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


@st.composite
def hostile_chain(draw, base):
    from atenmap.model import Chain, KeyChain, SourceInfo, Step

    def text():
        return "".join(draw(st.lists(HOSTILE, min_size=1, max_size=3)))

    steps = tuple(Step.make(draw(st.sampled_from(["native", "launch", "kernel", "stub_call", "register", "yaml", "helper"])),
                            text(), draw(st.one_of(st.none(), st.just("aten/src/ATen/native/" + text() + ".cpp"))),
                            draw(st.integers(1, 10**6)), detail=text())
                  for _ in range(draw(st.integers(1, 4))))
    return Chain(base.op, SourceInfo("/src/" + text(), text(), None), (*base.keys, KeyChain(text(), steps)),
                 warnings=(text(),))


@pytest.fixture(scope="module")
def base_chain():
    from atenmap.api import Index

    with tempfile.TemporaryDirectory() as cache:
        old = os.environ.get("ATENMAP_CACHE")
        os.environ["ATENMAP_CACHE"] = cache
        try:
            with Index.open(FIXTURE_TREE, codegen=False) as ix:
                yield ix.chain("mul.out", keys=["CUDA"])
        finally:
            os.environ.pop("ATENMAP_CACHE") if old is None else os.environ.__setitem__("ATENMAP_CACHE", old)


@fuzz(200)
@given(st.data())
def test_every_output_format_escapes_hostile_strings(base_chain, data):
    from atenmap.views import editor, gdb, graph, text

    chain = data.draw(hostile_chain(base_chain))
    outs = {"text": "\n".join(text.chain_lines(chain)), "json": text.chain_json(chain),
            "lines": "\n".join(editor.render_lines(chain)), "gdb": gdb.gdb_script(chain),
            "dot": graph.render([chain], "dot").decode(), "mermaid": graph.render([chain], "mermaid").decode()}
    for fmt, out in outs.items():
        bad = _CONTROL_OUT.search(out)
        assert bad is None, (fmt, out[max(0, bad.start() - 40):bad.end() + 40])
    for line in outs["dot"].splitlines():  # every quoted string closes on its line
        assert len(__import__("re").findall(r'(?<!\\)(?:\\\\)*"', line)) % 2 == 0, line
    for line in outs["mermaid"].splitlines()[1:]:
        if '["' in line:
            assert line.rstrip().endswith('"]') and line.count('"') == 2, line


@fuzz(40)
@given(st.sampled_from(["kernel", "search", "where", "chain", "graph", "lines"]), HOSTILE)
def test_cli_outputs_carry_no_control_characters(capsys, verb, arg):
    code, out, err = cli_run(capsys, verb, arg or "x", "--source", str(FIXTURE_TREE), "--no-codegen")
    assert code in (0, 1, 2) and "Traceback" not in err
    for stream in (out, err):
        bad = _CONTROL_OUT.search(stream)
        assert bad is None, (verb, arg, stream)


# ---- the trace reader (issue 23 item 4: the trace helper's branch bounds it) ---------------------

JSON_LEAF = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=False), st.text(max_size=12))
TRACE_EVENT = st.fixed_dictionaries({}, optional={
    "ph": st.sampled_from(["X", "B", "E", "i", "f", "s", 1, None, ["X"]]),
    "cat": st.sampled_from(["kernel", "gpu_memcpy", "gpu_memset", "cpu_op", "cuda_runtime", "", 3, ["kernel"]]),
    "name": st.one_of(st.text(max_size=20), JSON_LEAF, st.lists(JSON_LEAF, max_size=2)),
    "args": st.one_of(JSON_LEAF, st.dictionaries(st.sampled_from(["correlation", "External id", "stream"]),
                                                 st.one_of(JSON_LEAF, st.lists(JSON_LEAF, max_size=2)))),
    "ts": JSON_LEAF, "dur": JSON_LEAF, "id": st.one_of(JSON_LEAF, st.lists(JSON_LEAF, max_size=2)),
    "pid": JSON_LEAF, "tid": JSON_LEAF})


@fuzz(60)
@example("[" * 100_000 + "]" * 100_000)  # a RecursionError traceback
@example({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "args": {"correlation": [1]}}]})  # a list as an id
@example({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1e17, "dur": 1e17,  # over SQLite's 64 bits
                            "args": {"correlation": 2**70, "External id": 2**65}},
                           {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "args": {"correlation": 2**70}},
                           {"ph": "X", "cat": "cpu_op", "name": "aten::mul", "ts": -1e17, "args": {"External id": 2**64}}]})
@given(st.one_of(
    st.fixed_dictionaries({"traceEvents": st.lists(TRACE_EVENT, max_size=6)}),
    st.lists(TRACE_EVENT, max_size=6),
    st.recursive(JSON_LEAF, lambda kids: st.one_of(st.lists(kids, max_size=3), st.dictionaries(st.text(max_size=5), kids, max_size=3)),
                 max_leaves=12),
    st.integers(1, 200_000).map(lambda n: "[" * n + "]" * n)))
def test_kernel_from_trace_answers_or_refuses_in_one_line(capsys, tmp_path_factory, doc):
    """Adjust after merging the trace helper's reader (item 4): deep nesting and a list where an
    id is expected must be one line there."""
    import json as _json

    path = tmp_path_factory.mktemp("trace") / "t.json"
    path.write_text(doc if isinstance(doc, str) else _json.dumps(doc))
    code, out, err = cli_run(capsys, "kernel", "--from-trace", str(path), "--source", str(FIXTURE_TREE), "--no-codegen")
    assert code in (0, 1, 2) and "Traceback" not in err, err
    assert len([ln for ln in err.splitlines() if ln.startswith("atenmap: error")]) <= 1, err
