"""The query-driven preview on a tree never indexed (Note [Query-driven preview] in preview.py)."""
from __future__ import annotations

import pytest

from tests.test_chain_generated import _on_a_terminal


def _lines(ix, op, keys):
    from atenmap.cli.chain_run import load_chain_for
    from atenmap.views import text as render

    return render.chain_lines(load_chain_for(ix, op, keys, 8, note=lambda _m: None)[0])


def _preview_and_complete(tree, op, keys):
    """(the preview's Closure, its chain's lines, the complete ``--no-codegen`` answer's lines) of ``op``
    on ``tree``, as ``atenmap OP --key KEYS`` would print them."""
    from atenmap import preview
    from atenmap.api import Index
    from atenmap.source.find import find_source

    info = find_source(str(tree))
    with preview.partial_index(info, op, keys) as got:
        ix, closure = got
        got_lines = _lines(ix, op, keys)
    with Index.open(info, codegen=False) as full:
        want = _lines(full, op, keys)
    return closure, got_lines, want


def _real_preview_steps(index, op):
    """The steps of ``op``'s preview on ``index``'s tree (None: no preview) and of the complete answer,
    for the default keys (as partial_index and ``atenmap OP`` choose them)."""
    from atenmap import devices, preview

    def steps(ch):
        return {(s.file, s.line, s.role, s.symbol) for k in ch.keys for s in k.walk()}

    with preview.partial_index(index.source, op, None) as got:
        if got is None:
            return None, None
        ix, _closure = got
        found = ix.lookup(op).operator
        keys = devices.common_keys(ix.operator_keys(found)) or None
        shown = steps(ix.chain(found, keys=keys))
    return shown, steps(index.chain(found, keys=keys))


def test_preview_parses_the_chains_files_only_and_answers_as_the_full_index(mini_tree):
    from atenmap import preview
    from atenmap.api import Index
    from atenmap.source.find import find_source

    info = find_source(str(mini_tree))
    assert preview.never_indexed(info)
    with preview.partial_index(info, "mul.out", ["CUDA"]) as got:
        ix, closure = got
        files = set(closure.files)
        assert {"aten/src/ATen/native/BinaryOps.cpp", "aten/src/ATen/native/cuda/BinaryMulKernel.cu",
                "aten/src/ATen/native/cuda/CUDALoops.cuh"} <= files
        assert len(files) < closure.total / 2
        assert not any("/cpu/" in f for f in files)  # another device's kernels are not read
        got_lines = _lines(ix, "mul.out", ["CUDA"])
        tmp = ix.store.path
    assert not tmp.exists()  # the partial store is removed
    assert preview.never_indexed(info)  # and it is not the index
    with Index.open(info, codegen=False) as full:
        assert got_lines == _lines(full, "mul.out", ["CUDA"])
    assert not preview.never_indexed(info)


def test_the_preview_records_its_chains_lookups_through_the_observer(mini_tree):
    """Note [Lookups told to an observer]: the preview's recorder, handed to Index.chain, gets each
    name the chain looked up with the files that answered, the stubs, the meta function, the picks
    by include distance, the template arguments with no class and the functor's operator()."""
    from atenmap import preview
    from atenmap.source.find import find_source

    kernel, loops = "aten/src/ATen/native/cuda/BinaryMulKernel.cu", "aten/src/ATen/native/cuda/Loops.cuh"
    with preview.partial_index(find_source(str(mini_tree)), "mul.out", ["CUDA"]) as got:
        ix, _closure = got
        recorder = preview._Recorder()
        chain = ix.chain("mul.out", keys=["CUDA"], observer=recorder)
        assert chain == ix.chain("mul.out", keys=["CUDA"])  # recording changes no answer
    looked = recorder.looked
    assert looked["mul_kernel_cuda"] == {kernel} and looked["gpu_kernel_impl"] == {"aten/src/ATen/native/cuda/CUDALoops.cuh"}
    assert looked[preview._PICKS]["gpu_kernel_impl"] == {(loops, 1)}  # included by the calling file
    assert looked[preview._PICKS]["mul_kernel_cuda"] == {(kernel, 0)}  # in the calling file
    assert "mul_stub" in looked[preview._STUB_LOOKUPS] and "mul_Tensor" in looked[preview._META_LOOKUPS]
    assert "mul_out" in looked[preview._NATIVE_LOOKUPS] and "mul_out" in looked[preview._UNPICKED]  # no site
    assert {"opmath_t", "scalar_t"} <= looked[preview._NO_CLASS]  # template arguments that name no class
    assert looked[preview._MEMBER_PICKS] == {"MulFunctor": {0}}  # MulFunctor::operator(), in the kernel's file
    assert "common_dtype" in looked[preview._EMPTY] - looked[preview._ANSWERED]  # a member function: none
    assert looked[preview._RUNS_NOTHING] == set()


def _runs_nothing_ops(tree):
    """``mini_caller`` (CPU) calls ``at::mini_noop``, whose CPU kernel returns its input (runs nothing),
    and ``at::mul``; ``mini_outer`` calls ``at::mini_caller``."""
    _yaml_entry(tree, "- func: mini_caller(Tensor self) -> Tensor\n  dispatch:\n    CPU: mini_caller_cpu\n\n"
                      "- func: mini_noop(Tensor self) -> Tensor\n  dispatch:\n    CPU: mini_noop_cpu\n\n"
                      "- func: mini_outer(Tensor self) -> Tensor\n  dispatch:\n    CPU: mini_outer_cpu\n")
    (tree / "aten/src/ATen/native/MiniNoop.cpp").write_text(
        "#include <ATen/native/BinaryOps.h>\nnamespace at::native {\n"
        "Tensor mini_noop_cpu(const Tensor& self) {\n  return self;\n}\n"
        "Tensor mini_caller_cpu(const Tensor& self) {\n  auto out = at::mini_noop(self);\n  return at::mul(out, self);\n}\n"
        "Tensor mini_outer_cpu(const Tensor& self) {\n  return at::mini_caller(self);\n}\n"
        "} // namespace at::native\n")


def test_an_operator_called_that_runs_nothing_is_told_where_the_chain_shows_it(mini_tree):
    """The resolver tells the observer of ``mini_noop: no kernel or library call in its CPU chain`` as
    an event (the preview checks that operator's own chain: _nothing_runs_checked), for the steps the
    chain shows only: inside mini_outer's expansion of mini_caller the leaf call is left out."""
    from atenmap import preview
    from atenmap.api import Index
    from atenmap.source.find import find_source

    _runs_nothing_ops(mini_tree)
    info = find_source(str(mini_tree))
    with preview.partial_index(info, "mini_caller", ["CPU"]) as got:
        ix, closure = got
        recorder = preview._Recorder()
        ix.chain("mini_caller", keys=["CPU"], observer=recorder)
        got_lines = _lines(ix, "mini_caller", ["CPU"])
    assert recorder.looked[preview._RUNS_NOTHING] == {("mini_noop", "CPU")}
    assert "aten/src/ATen/native/MiniNoop.cpp" in closure.files
    with Index.open(info, codegen=False) as full:
        assert got_lines == _lines(full, "mini_caller", ["CPU"])
        assert any("mini_noop: no kernel or library call in its CPU chain" in l for l in got_lines)
        outer = preview._Recorder()
        chain = full.chain("mini_outer", keys=["CPU"], observer=outer)
        assert any(s.symbol == "mini_caller" for k in chain.keys for s in k.walk())  # expanded
        assert not any("no kernel or library call" in s.detail for k in chain.keys for s in k.walk())
        assert outer.looked[preview._RUNS_NOTHING] == set()


def _same_name_elsewhere(tree):
    """mul's CUDA kernel calls ``mul_helper``, defined in a header it includes; the native's own file
    (read first) defines a ``mul_helper`` too, which the complete answer does not pick (include
    distance wins: Note [Resolving names] in resolve/chain.py)."""
    cuda = tree / "aten/src/ATen/native/cuda"
    (cuda / "MulHelper.cuh").write_text(
        "#pragma once\n#include <ATen/native/cuda/Loops.cuh>\nnamespace at::native {\n"
        "template <typename T>\nstruct HelperFunctor {\n  C10_DEVICE T operator()(T a, T b) const { return a * b; }\n};\n"
        "inline void mul_helper(TensorIteratorBase& iter) {\n  gpu_kernel(iter, HelperFunctor<float>());\n}\n"
        "} // namespace at::native\n")
    kernel = cuda / "BinaryMulKernel.cu"
    kernel.write_text(kernel.read_text().replace(
        "#include <ATen/native/cuda/Loops.cuh>\n", "#include <ATen/native/cuda/Loops.cuh>\n#include <ATen/native/cuda/MulHelper.cuh>\n")
        .replace("  auto common_dtype = iter.common_dtype();\n", "  auto common_dtype = iter.common_dtype();\n  mul_helper(iter);\n"))
    native = tree / "aten/src/ATen/native/BinaryOps.cpp"
    native.write_text(native.read_text() + "\nnamespace at::native {\nstatic void mul_helper(TensorIteratorBase& iter) {\n"
                      "  mul_stub(iter.device_type(), iter);\n}\n} // namespace at::native\n")


def test_a_name_defined_in_a_file_not_read_is_read_before_the_preview_picks(mini_tree):
    """Note [A preview never shows a wrong step]: the lookup of ``mul_helper`` finds the native file's
    definition among the files read; the header that defines it too is read, so the preview picks
    what the complete answer picks (by includes), not the one it happened to have."""
    _same_name_elsewhere(mini_tree)
    closure, got_lines, want = _preview_and_complete(mini_tree, "mul.out", ["CUDA"])
    assert "aten/src/ATen/native/cuda/MulHelper.cuh" in closure.files
    assert any("MulHelper.cuh" in l and "mul_helper" in l for l in want)
    assert got_lines == want


def test_includes_of_files_not_parsed_come_from_their_bytes():
    """Note [Includes by bytes]: each #include with the #if lines around it, an #else negated."""
    from atenmap.preview import _include_rows

    rows = _include_rows(b"#include <a.h>\n#ifdef USE_ROCM\n#include \"b.h\"\n#else\n#  include <c.h>\n#endif\n"
                         b"// #include <not.h>\n#if X\n#elif Y\n#include <d.h>\n#endif\n")
    assert [(r[1], r[3], r[10]) for r in rows] == [
        ("a.h", 1, ""), ("b.h", 3, "defined(USE_ROCM)"), ("c.h", 5, "!(defined(USE_ROCM))"), ("d.h", 10, "Y")]


def test_no_preview_for_an_unknown_operator(mini_tree):
    from atenmap import preview
    from atenmap.source.find import find_source

    with preview.partial_index(find_source(str(mini_tree)), "no_such_op", None) as got:
        assert got is None


def test_on_a_terminal_the_preview_comes_first_then_the_complete_answer(mini_tree, capsys, monkeypatch):
    from atenmap.cli.chain_run import PREVIEW_FIRST
    from tests.conftest import cli_run

    label = PREVIEW_FIRST.split("{n}")[0]
    _on_a_terminal(monkeypatch)
    monkeypatch.delenv("ATENMAP_PREVIEW", raising=False)  # on by default (config.preview)
    code, first, err = cli_run(capsys, "mul.out", "--key", "CUDA", "--no-codegen", "--source", str(mini_tree))
    assert code == 0, err
    assert [l for l in err.splitlines() if l.startswith(f"atenmap: {label}")]
    code, complete, err = cli_run(capsys, "mul.out", "--key", "CUDA", "--no-codegen", "--source", str(mini_tree))
    assert code == 0 and label not in err  # indexed now: the complete answer at once
    assert first == complete + complete  # the preview, identical here, then the complete answer


@pytest.mark.parametrize("how", ["env", "config"])
def test_no_preview_when_turned_off(mini_tree, capsys, monkeypatch, tmp_path, how):
    from atenmap.cli.chain_run import PREVIEW_FIRST
    from tests.conftest import cli_run

    label = PREVIEW_FIRST.split("{n}")[0]
    _on_a_terminal(monkeypatch)
    if how == "env":
        monkeypatch.setenv("ATENMAP_PREVIEW", "0")
    else:
        monkeypatch.delenv("ATENMAP_PREVIEW", raising=False)
        (tmp_path / "config.toml").write_text("preview = false\n")
        monkeypatch.setenv("ATENMAP_CONFIG", str(tmp_path / "config.toml"))
    code, out, err = cli_run(capsys, "mul.out", "--key", "CUDA", "--no-codegen", "--source", str(mini_tree))
    assert code == 0 and label not in err and out.count("[CUDA]") == 1


def test_pipes_and_json_get_the_complete_answer_only(mini_tree, capsys, monkeypatch):
    from atenmap.cli.chain_run import PREVIEW_FIRST
    from tests.conftest import cli_run

    label = PREVIEW_FIRST.split("{n}")[0]
    code, out, err = cli_run(capsys, "mul.out", "--key", "CUDA", "--no-codegen", "--source", str(mini_tree))
    assert code == 0 and label not in err and out.count("[CUDA]") == 1
    other = mini_tree.parent / "other"
    mini_tree.rename(other)  # a tree never indexed again, now on a terminal but with --json
    _on_a_terminal(monkeypatch)
    code, js, err = cli_run(capsys, "mul.out", "--key", "CUDA", "--no-codegen", "--json", "--source", str(other))
    assert code == 0 and label not in err and js.startswith("{") and js.count('"op"') <= 1


@pytest.mark.realtree
def test_real_2_6_mul_out_cuda_preview_names_the_same_launches(real_index_26):
    """The preview of mul.out on CUDA, from a dozen files of 2.6.0, names the launches of the complete
    answer (the index with torchgen's output: the hand-written steps are the same)."""
    from atenmap import preview

    with preview.partial_index(real_index_26.source, "mul.out", ["CUDA"]) as got:
        ix, closure = got
        assert len(closure.files) <= preview.MAX_FILES and closure.total > 1000
        ch = ix.chain("mul.out", keys=["CUDA"])
        seen = {(s.file, s.line, s.symbol) for k in ch.keys for s in k.walk() if s.role == "launch"}
    full = real_index_26.chain("mul.out", keys=["CUDA"])
    want = {(s.file, s.line, s.symbol) for k in full.keys for s in k.walk() if s.role == "launch"}
    assert seen == want and len(want) >= 4


@pytest.mark.realtree
@pytest.mark.parametrize("op", ["relu", "clamp", "index_select", "topk", "fill_.Scalar", "trace", "where.self",
                                "_efficient_attention_forward"])
def test_real_2_6_a_preview_shows_no_step_the_complete_answer_lacks(real_index_26, op):
    """Note [A preview never shows a wrong step], on operators whose preview once named another
    definition (relu, clamp: at::native::min/max), said "no kernel" (fill_.Scalar, trace), showed a
    launch without its __global__ (topk), or showed `kernel_fn` before reading the dispatcher that
    hands it kernels (_efficient_attention_forward, Note [Kernels passed to a callback]): every step
    of the preview, if there is one, is a step of the complete answer (whose generated steps only
    add to it)."""
    shown, complete = _real_preview_steps(real_index_26, op)
    if shown is None:
        return  # no preview: the complete answer alone
    assert shown and shown <= complete


def _helper_near_and_far(tree):
    """mul's CUDA kernel calls ``near_fn`` (one definition: read) and ``mul_helper``, defined in six
    headers (too many to follow): two the kernel includes (Near.cuh, read for ``near_fn``, and
    Near2.cuh) and four behind an umbrella header, one include further (as ATen's SIMD headers
    behind cpu/vec/vec.h)."""
    cuda = tree / "aten/src/ATen/native/cuda"
    body = "inline void mul_helper(TensorIteratorBase& iter) {\n  gpu_kernel(iter, HelperFunctor<float>());\n}\n"
    functor = ("template <typename T>\nstruct HelperFunctor {\n  C10_DEVICE T operator()(T a, T b) const { return a * b; }\n};\n")
    (cuda / "Near.cuh").write_text("#pragma once\n#include <ATen/native/cuda/Loops.cuh>\nnamespace at::native {\n" + functor
                                   + body + "inline void near_fn(TensorIteratorBase& iter) {\n  mul_helper(iter);\n}\n"
                                   "} // namespace at::native\n")
    (cuda / "Near2.cuh").write_text("#pragma once\nnamespace at::native {\n" + body + "} // namespace at::native\n")
    far = [f"Far{i}.cuh" for i in range(4)]
    for name in far:
        (cuda / name).write_text("#pragma once\nnamespace at::native {\n" + body + "} // namespace at::native\n")
    (cuda / "Umbrella.cuh").write_text("#pragma once\n" + "".join(f"#include <ATen/native/cuda/{n}>\n" for n in far))
    kernel = cuda / "BinaryMulKernel.cu"
    kernel.write_text(kernel.read_text().replace(
        "#include <ATen/native/cuda/Loops.cuh>\n", "#include <ATen/native/cuda/Loops.cuh>\n#include <ATen/native/cuda/Near.cuh>\n"
        "#include <ATen/native/cuda/Near2.cuh>\n#include <ATen/native/cuda/Umbrella.cuh>\n")
        .replace("  auto common_dtype = iter.common_dtype();\n",
                 "  auto common_dtype = iter.common_dtype();\n  near_fn(iter);\n  mul_helper(iter);\n"))
    return ["aten/src/ATen/native/cuda/" + n for n in far]


def test_only_files_as_close_as_the_pick_are_read(mini_tree):
    """Note [A preview never shows a wrong step]: ``mul_helper`` is picked by include distance (1)
    from the kernel file; Near2.cuh, as close, could add a definition and is read; the four headers
    one include further cannot change the pick and are not read. The preview equals the complete answer."""
    far = _helper_near_and_far(mini_tree)
    closure, got_lines, want = _preview_and_complete(mini_tree, "mul.out", ["CUDA"])
    assert "aten/src/ATen/native/cuda/Near2.cuh" in closure.files
    assert not set(far) & set(closure.files)
    assert any("Near2.cuh" in l and "mul_helper" in l for l in want)
    assert not any("Far" in l for l in want)
    assert got_lines == want


def test_a_name_defined_where_it_is_called_reads_no_other_definition(mini_tree):
    """The kernel file defines ``mul_helper`` itself (the resolver's same-file rule): the headers it
    includes that define one too cannot change the pick and are not read."""
    far = _helper_near_and_far(mini_tree)
    kernel = mini_tree / "aten/src/ATen/native/cuda/BinaryMulKernel.cu"
    text = kernel.read_text()
    at = text.index("void mul_kernel_cuda")
    kernel.write_text(text[:at] + "static void mul_helper(TensorIteratorBase& iter) {\n  (void)iter;\n}\n\n" + text[at:])
    closure, got_lines, want = _preview_and_complete(mini_tree, "mul.out", ["CUDA"])
    assert not set(far) & set(closure.files)
    assert "aten/src/ATen/native/cuda/Near2.cuh" not in closure.files
    assert got_lines == want


def test_a_lookup_that_found_nothing_read_is_a_missing_step(mini_tree):
    """``vecx::mul_helper`` (as ``vec::clamp_min`` from a CPU kernel, defined only in ATen's SIMD
    headers) matches no definition read; ``mul_helper`` unqualified is picked at distance 1. The
    headers defining ``vecx::mul_helper`` are not read: the preview lacks that step, shows none the
    complete answer lacks."""
    import re


    far = _helper_near_and_far(mini_tree)
    for rel in far:
        path = mini_tree / rel
        path.write_text(path.read_text().replace("inline void mul_helper", "namespace vecx {\ninline void mul_helper")
                        .replace("} // namespace at::native", "} // namespace vecx\n} // namespace at::native"))
    kernel = mini_tree / "aten/src/ATen/native/cuda/BinaryMulKernel.cu"
    kernel.write_text(kernel.read_text().replace("  mul_helper(iter);\n", "  mul_helper(iter);\n  vecx::mul_helper(iter);\n"))
    closure, got_lines, want = _preview_and_complete(mini_tree, "mul.out", ["CUDA"])
    assert not set(far) & set(closure.files)

    def plain(lines):
        return {" ".join(re.sub(r"[│├└─]", " ", l).split()) for l in lines}

    assert any("Far" in l for l in want) and not any("Far" in l for l in got_lines)
    assert plain(got_lines) <= plain(want)


def test_a_meta_function_lookup_reads_only_meta_functions(mini_tree):
    """TORCH_META_FUNC(mm) is looked up by the op's name; four CPU headers define an unrelated function
    ``mm`` (as ATen's SIMD headers define ``exp``): they cannot be the meta step and are not read."""
    from atenmap import preview
    from atenmap.api import Index
    from atenmap.source.find import find_source

    far = [f"aten/src/ATen/native/cpu/VecMm{i}.h" for i in range(4)]
    for rel in far:
        (mini_tree / rel).write_text("#pragma once\nnamespace at::vec {\ninline float mm(float a, float b) {\n"
                                     "  return a * b;\n}\n} // namespace at::vec\n")
    info = find_source(str(mini_tree))
    with preview.partial_index(info, "mm", None) as got:
        ix, closure = got
        assert "aten/src/ATen/native/LinearAlgebra.cpp" in closure.files
        assert not set(far) & set(closure.files)
        got_lines = _lines(ix, "mm", None)
    with Index.open(info, codegen=False) as full:
        assert got_lines == _lines(full, "mm", None)


def _helper_in_units(tree, count):
    """mul's CUDA kernel calls ``mul_helper``, defined in the native's own file (read first) and in
    ``count`` CUDA translation units nothing includes: the resolver's pick falls to the namespace
    rule, which answers nothing for more than two files of the caller's namespace (Note [Resolving
    names] in resolve/chain.py)."""
    cuda = tree / "aten/src/ATen/native/cuda"
    units = []
    for i in range(count):
        name = f"MulHelperUnit{i}.cu"
        (cuda / name).write_text("#include <ATen/native/cuda/Loops.cuh>\nnamespace at::native {\n"
                                 "void mul_helper(TensorIteratorBase& iter) {\n  (void)iter;\n}\n} // namespace at::native\n")
        units.append("aten/src/ATen/native/cuda/" + name)
    kernel = cuda / "BinaryMulKernel.cu"
    kernel.write_text(kernel.read_text().replace("  auto common_dtype = iter.common_dtype();\n",
                                                 "  auto common_dtype = iter.common_dtype();\n  mul_helper(iter);\n"))
    native = tree / "aten/src/ATen/native/BinaryOps.cpp"
    native.write_text(native.read_text() + "\nnamespace at::native {\nvoid mul_helper(TensorIteratorBase& iter) {\n"
                      "  mul_stub(iter.device_type(), iter);\n}\n} // namespace at::native\n")
    return units


def test_a_namespace_rule_pick_among_many_unread_files_answers_nothing(mini_tree):
    """Note [A preview never shows a wrong step]: the preview has read one ``mul_helper`` (the native's
    file) and would pick it by the namespace rule; four more files define it, too many to read
    (BLANK_OVER), so its lookup from the kernel answers nothing: no step, as the complete answer
    (five files in the namespace: no pick), and the four files are not read."""
    from atenmap import preview

    units = _helper_in_units(mini_tree, preview.BLANK_OVER + 1)
    closure, got_lines, want = _preview_and_complete(mini_tree, "mul.out", ["CUDA"])
    assert "mul_helper" in closure.blank
    assert not set(units) & set(closure.files)
    assert not any("mul_helper" in l for l in want)
    assert got_lines == want


def test_a_namespace_rule_pick_among_few_unread_files_reads_them(mini_tree):
    """With BLANK_OVER files or fewer the preview reads them all and picks as the complete answer."""
    units = _helper_in_units(mini_tree, 1)
    closure, got_lines, want = _preview_and_complete(mini_tree, "mul.out", ["CUDA"])
    assert not closure.blank and set(units) <= set(closure.files)
    assert any("mul_helper" in l for l in want)
    assert got_lines == want


def _yaml_entry(tree, text):
    yaml = tree / "aten/src/ATen/native/native_functions.yaml"
    yaml.write_text(yaml.read_text() + "\n" + text)


def test_a_kernel_named_by_a_pasting_macro_is_found(mini_tree):
    """Note [Kernels a macro names]: ``foreach_tensor_mini_scalar_kernel_slow`` appears nowhere in the
    text; a ``#define`` of its file pastes ``foreach_tensor_##OP##_scalar_kernel_slow``, so that file
    is read and the preview shows the kernel as the complete answer does."""
    _yaml_entry(mini_tree, "- func: _foreach_mini.Scalar(Tensor[] self, Scalar scalar) -> Tensor[]\n  dispatch:\n"
                           "    CPU: foreach_tensor_mini_scalar_kernel_slow\n")
    (mini_tree / "aten/src/ATen/native/ForeachMini.cpp").write_text(
        "#include <ATen/native/BinaryOps.h>\nnamespace at::native {\n"
        "#define FOREACH_MINI_SCALAR(OP)                                                      \\\n"
        "  std::vector<Tensor> foreach_tensor_##OP##_scalar_kernel_slow(TensorList tensors, const Scalar& scalar) { \\\n"
        "    std::vector<Tensor> result;                                                  \\\n"
        "    for (const auto& t : tensors) {                                              \\\n"
        "      result.emplace_back(at::mul(t, scalar));                                   \\\n"
        "    }                                                                            \\\n"
        "    return result;                                                               \\\n"
        "  }\n\nFOREACH_MINI_SCALAR(mini)\n} // namespace at::native\n")
    closure, got_lines, want = _preview_and_complete(mini_tree, "_foreach_mini.Scalar", ["CPU"])
    assert "aten/src/ATen/native/ForeachMini.cpp" in closure.files
    assert any("foreach_tensor_mini_scalar_kernel_slow" in l and "made by macro" in l for l in want)
    assert got_lines == want


def test_pasted_definers_need_spelled_text():
    """A macro pasting only parameters (``a##b``) could make any name: not taken as a definer; nor a
    macro whose file never uses it with the words the name needs."""
    from atenmap.preview import _pasted_definers

    texts = {"a.cpp": b"#define MAKE(OP) void foreach_##OP##_kernel(int x) { }\nMAKE(add)\n",
             "b.cpp": b"#define CAT(a, b) a##b\nCAT(foreach_add, _kernel)\n"}
    among = ["a.cpp", "b.cpp"]
    assert _pasted_definers("foreach_add_kernel", texts, among) == ["a.cpp"]
    assert _pasted_definers("foreach_mul_kernel", texts, among) == []
    assert _pasted_definers("other_add_kernel", texts, among) == []


def test_a_registration_with_its_arguments_on_the_next_line_defines_the_stub():
    """``REGISTER_DISPATCH(\\n    name_stub,\\n    &kernel)`` (clang-format's wrapping in BinaryOpsKernel.cpp)
    registers the stub; a dtype switch's arguments on their own line define nothing."""
    from atenmap.preview import defines

    assert defines(b"REGISTER_DISPATCH(\n    mini_stub,\n    &mini_kernel)\n", "mini_stub")
    assert not defines(b"AT_DISPATCH_ALL_TYPES(\n    dtype, \"x\", [&] {});\n", "dtype")


def test_an_operator_with_no_kernel_in_the_tree_gets_a_preview_of_its_yaml_entry(mini_tree):
    """A kernel torchgen writes (``squeeze_copy_dims``: CompositeExplicitAutogradNonFunctional) is in no
    file of the tree: the preview reads none and shows the yaml step, as the complete answer."""
    _yaml_entry(mini_tree, "- func: mini_generated(Tensor self) -> Tensor\n  dispatch:\n"
                           "    CompositeExplicitAutogradNonFunctional: mini_generated_kernel\n")
    closure, got_lines, want = _preview_and_complete(mini_tree, "mini_generated", None)
    assert closure.files == []
    assert any("yaml" in l and "mini_generated" in l for l in got_lines)
    assert got_lines == want


@pytest.mark.realtree
@pytest.mark.parametrize("op", ["relu", "max_pool2d_with_indices", "_foreach_add_.Tensor", "mm", "_cast_Int",
                                "special_shifted_chebyshev_polynomial_v.out", "trace"])
def test_real_2_6_previews_of_the_newer_rules_show_no_wrong_step(real_index_26, op):
    """Operators that had no preview before the rules of Note [A preview never shows a wrong step]
    that blank namespace-rule picks (relu), drop lookups whose every answer was another device's
    (max_pool2d_with_indices), find kernels a macro names (_foreach_add_.Tensor), stop the closure
    at CLOSURE_FILES (mm), show the yaml step alone (_cast_Int), see a registration's arguments on
    the next line (special_shifted_chebyshev_polynomial_v.out), mark "no launch found" not whole
    (conv_transpose2d.input, until it called operators written on tensors: see the next test) and
    follow operators called as methods (trace): each gets one, and
    every step of it is a step of the complete answer (whose generated steps only add to it)."""
    shown, complete = _real_preview_steps(real_index_26, op)
    assert shown is not None
    assert shown and shown <= complete


@pytest.mark.realtree
def test_a_preview_that_cannot_vouch_for_an_operator_call_gives_way(real_index_26):
    """conv_transpose2d.input's composite calls operators written on tensors (Note [Operators
    written on tensors]); one of them says it runs nothing where a step was not followed, so the
    preview gives way to the complete answer, saying why, rather than show a chain it cannot vouch for."""
    from atenmap import preview

    why: list[str] = []
    with preview.partial_index(real_index_26.source, "conv_transpose2d.input", None, why=why) as got:
        assert got is None
    # since operators are followed four deep (resolve/chain.py MAX_OP_DEPTH), the preview may meet a
    # name defined in too many files first: either way it gives way, saying why
    assert len(why) == 1 and why[0] in ("an operator called says it runs nothing, and a step not followed",
                                        "a name looked up is defined in more than 60 files or 6000000 bytes"), why


def test_a_name_whose_every_lookup_answered_another_devices_rows_reads_nothing(mini_tree):
    """mul's CUDA kernel calls ``mul_cpu_only``, defined in the CPU kernel's file (read for the CPU
    key) and in four more CPU files: the CUDA lookup answers nothing (those rows are another
    device's), so the name counts as not found and the four files are not read (they could not be
    picked from a CUDA file either); the preview equals the complete answer."""
    body = "void mul_cpu_only(TensorIteratorBase& iter) {\n  (void)iter;\n}\n"
    cpu = mini_tree / "aten/src/ATen/native/cpu"
    others = []
    for i in range(4):
        (cpu / f"MulCpuOnly{i}.cpp").write_text("namespace at::native {\n" + body + "} // namespace at::native\n")
        others.append(f"aten/src/ATen/native/cpu/MulCpuOnly{i}.cpp")
    kernel = cpu / "BinaryOpsKernel.cpp"
    kernel.write_text(kernel.read_text() + "\nnamespace at::native {\n" + body + "} // namespace at::native\n")
    cuda = mini_tree / "aten/src/ATen/native/cuda/BinaryMulKernel.cu"
    cuda.write_text(cuda.read_text().replace("  auto common_dtype = iter.common_dtype();\n",
                                             "  auto common_dtype = iter.common_dtype();\n  mul_cpu_only(iter);\n"))
    closure, got_lines, want = _preview_and_complete(mini_tree, "mul.out", ["CPU", "CUDA"])
    assert "aten/src/ATen/native/cpu/BinaryOpsKernel.cpp" in closure.files
    assert not set(others) & set(closure.files)
    assert got_lines == want


def test_a_functor_class_is_found_by_its_body_or_an_out_of_class_member():
    """Note [Members no name scan sees]: the files that may hold ``MulFunctor::operator()`` are those
    defining the class (an export macro, template arguments, ``final`` and bases allowed) or one of
    its members out of the class; a forward declaration or a mere use is not one of them."""
    from atenmap.preview import Closure, _member_definers, _owner_class

    texts = {"body.cuh": b"namespace at::native {\ntemplate <typename T>\nstruct TORCH_API MulFunctor final : Base {\n"
                         b"  T operator()(T a, T b) const { return a * b; }\n};\n}\n",
             "special.h": b"template <> struct MulFunctor<bool> {\n  bool operator()(bool a, bool b) const;\n};\n",
             "member.cpp": b"template <typename T>\nT MulFunctor<T>::operator()(T a, T b) const { return a * b; }\n",
             "forward.h": b"struct MulFunctor;\n",
             "use.cu": b"gpu_kernel(iter, MulFunctor<float>());\n",
             "other.h": b"struct DivFunctor {\n  float operator()(float a, float b) const { return a / b; }\n};\n"}
    closure = Closure(texts=texts, allowed=sorted(texts))
    assert _member_definers("MulFunctor", closure) == ["body.cuh", "member.cpp", "special.h"]
    assert _member_definers("DivFunctor", closure) == ["other.h"]
    assert _owner_class("::at::native::MulFunctor<float>::operator()") == "MulFunctor"
    assert _owner_class("operator()") == ""
