"""What an MPS chain runs: the MPSGraph operations its functions build and the graph run, read as
text from the ``.mm`` function bodies at query time (issue 36).

Note [MPSGraph operations by text]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
ATen's MPS kernels (native/mps/operations/*.mm, Objective-C++) mostly build an MPSGraph and run it:
``[mpsGraph additionWithPrimaryTensor:a secondaryTensor:b name:nil]`` adds one operation to the
graph, ``runMPSGraph(stream, graph, feeds, results)`` (native/mps/OperationUtils.mm) runs it. The
index reads ``.mm`` files with tree-sitter-cpp, which does not know Objective-C: message sends are
ERROR regions whose calls are not facts (docs/limits.md), so the chain stops at the native function
and its C++ helpers, and the runs block found nothing. Here the body of each MPS function on the
chain (a native or helper step in a ``.mm`` file, not under another operator's call) is read as
text, with the index's function spans: each ``[mpsGraph SELECTOR:`` is an MPSGraph operation, each
``runMPSGraph(`` the graph run. The graph is often built in a lambda handed to a shared helper
(add_sub_lerp_template -> binaryOpTensor, where runMPSGraph is), so a function called by name in
such a body and defined in an MPS file is read too, ``MAX_HOPS`` deep. The sends inside a macro
(``[mpsGraph func_stub##WithPrimaryTensor:``) name no selector and are left out.

Metal kernels the same way: ``lib.getPipelineStateForFunc(EXPR)`` is the kernel's lookup (a launch
run named by the expression, ``"naive_matmul_" + scalarToMetalTypeString(output)``), the
``mtl_dispatch1DJob(`` / ``dispatchThreads:`` / ``dispatchThreadgroups:`` line its dispatch. When
the expression starts with a string literal, its name up to the dtype suffix (``naive_matmul``) is
looked for as ``kernel void NAME`` in the tree's ``native/mps/kernels/*.metal`` (not indexed: read
here), and that line is the kernel's definition; a name built otherwise is read as a pattern (Note
[Kernel names a format builds] in metalnames.py). MPS library kernels (``MPSNDArrayMatrixMultiplication``)
are runs of their own (Note [MPS library kernels]). The bundled index has no files: it quotes the
lines read here (Note [MPS lines from the bundle]).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Union

from atenmap.extract import macros
from atenmap.extract.blanking import CODE_NOISE
from atenmap.extract.enclosing import TextBranches
from atenmap.model import Chain, KeyChain, Location, Reason, Role, Run, Step
from atenmap.resolve import metalnames
from atenmap.resolve.callfacts import CallFacts
from atenmap.resolve.decide import decide_all
from atenmap.resolve.runs import MAX_WHEN, bool_flags, default_call, reason_of

MPS_KEY = "MPS"
GRAPH_RUN = "runMPSGraph"
MAX_HOPS = 2  # functions called by name from a chain step's body, read for the graph they build or run
_SEND = re.compile(r"\[\s*\w*[gG]raph\s+([A-Za-z_]\w*)\s*:")  # [mpsGraph op:...], [graph op:...] (do_mm)
_INPUT = "placeholder"  # placeholderWithShape: a graph input, not an operation
_LOOKUP = re.compile(r"\bgetPipelineStateForFunc\s*\((.*)")
_DISPATCH = re.compile(r"\b(mtl_dispatch1DJob)\s*\(|\b(dispatchThreads|dispatchThreadgroups)\s*:")
_LITERAL = re.compile(r'^\s*"([A-Za-z_]\w*?)_?"')
_METAL_KERNELS = "aten/src/ATen/native/mps/kernels"
_MPS_HEADERS = "aten/src/ATen/native/mps"
_MPS_OPERATIONS = "aten/src/ATen/native/mps/operations"
_ATEN_MPS = "aten/src/ATen/mps"  # IndexKernels.h: the gather/scatter Metal source View.mm compiles
_INLINE_METAL = 'R"METAL('  # a .mm file's own Metal source (Gamma.mm, BitwiseOps.mm)
METAL_LOOKUP = "Metal kernel "
METAL_DISPATCH = "Metal dispatch"
_RUN = re.compile(r"\brunMPSGraph\s*\(")
# Note [MPS library kernels]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Besides MPSGraph and its own Metal kernels, ATen's MPS code runs Metal Performance Shaders' kernel
# objects directly: ``[[MPSNDArrayMatrixMultiplication alloc] initWithDevice:...]`` then ``[matmul
# encodeToCommandEncoder:...]`` (LinearAlgebra.mm's tiled bmm), ``MPSMatrixDecompositionLU`` and
# ``MPSMatrixSolveTriangular`` with ``[filter encodeToCommandBuffer:...]`` (linalg_lu_factor,
# linalg_solve_triangular), ``MPSNDArrayIdentity``'s ``reshapeWithCommandBuffer:`` (OperationUtils.mm's
# strided views). Each ``[MPSMatrixX alloc]`` / ``[MPSNDArrayX alloc]`` of a kernel class (not the
# data classes MPSMatrix, MPSNDArray and their descriptors) is a library run ``MPS CLASS (family)``
# at its line, and each ``[RECEIVER encodeToCommandBuffer:`` (``encodeToCommandEncoder:``,
# ``encodeWithCommandBuffer:``, ``reshapeWithCommandBuffer:``) whose receiver is not a graph is the
# run's encode, ``MPS encodeToCommandBuffer``, at its line: the object's work is enqueued there.
_MPS_KERNEL = re.compile(r"\[\s*(MPS(?:Matrix|NDArray)(?!Descriptor\b)[A-Z]\w*)\s+alloc\s*\]")
_MPS_ENCODE = re.compile(r"\[\s*([A-Za-z_]\w*)\s+(encodeToCommandBuffer|encodeToCommandEncoder|encodeWithCommandBuffer"
                         r"|reshapeWithCommandBuffer)\s*:")
_MPS_FAMILIES = (("MatrixMultiplication", "gemm"), ("DecompositionLU", "lu"), ("DecompositionCholesky", "cholesky"),
                 ("SolveTriangular", "trsm"), ("SolveLU", "getrs"), ("SolveCholesky", "potrs"), ("Identity", "copy"))
MPS_LIBRARY = "MPS "
# f(...), ns::f(...), f<T>(...) (Note [Helpers the index does not define]); not a.f(...), p->f(...)
_CALLED = re.compile(r"(?<![\w.>\]])([A-Za-z_]\w*)\s*(?:<[^<>;(){}]*>)?\s*\(")
_MPS_FILE = re.compile(r"(\.mm$|/mps/)")
_READ_ROLES = frozenset({Role.NATIVE, Role.HELPER, Role.KERNEL})

Spans = Callable[[str], list[tuple[int, int]]]
Definitions = Callable[[str], list[tuple[str, int]]]  # function name -> (file, line) of its definitions


# Note [MPS lines from the bundle]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# graph_runs reads lines through a provider: the tree's files (TreeLines), or what the bundled index
# quotes of them (QuotedLines; the bundle has no files, Note [What the bundle quotes] in
# source/bundle.py). The builder (quoted_rows) reads every function body of the MPS files in the
# index as _Bodies reads it. A body is live when one of its lines gives a run (a send, runMPSGraph,
# a getPipelineStateForFunc lookup, a dispatch) or calls by name a live body of an MPS file, at any
# depth. Of each live body the bundle quotes every line of code (the branches around its runs and
# calls: Note [The branches of an MPS run]; a blank or comment line reads as the blank line a quote
# leaves out), with the ``kernel void NAME`` line each lookup finds in the .metal files and the
# bodies of the same-file predicates their conditions call (use_metal_mm). Lines outside them read
# as blank: they give nothing, and from the tree they gave nothing either, or only called bodies that
# are not live -- reading those gives nothing and marks as read only bodies that are not live, so
# leaving them out changes no answer. Also quoted: the first line and end of each live body the
# index does not define (Note [Helpers the index does not define]), the expanded runs of a native a
# macro makes at its use's line (Note [Functions a macro makes]), the header of a body with a Metal
# lookup and the ``kernel void`` lines of the MPS headers and .mm Metal strings (Note [A kernel name the caller gives]),
# the line a lookup's argument runs on to and the assignments of a local it names, every .metal
# kernel's head and each instantiation's host names and kernel, ``[[host_name("i0_" "float" "_"
# "float")]] void kernel i0<`` (Note [Kernel names a format builds]; a name a caller binds is not
# known here, so all of them), and the ``#define`` lines a macro-made native's use expands (read
# when another quote keeps the use as written: Note [Functions a macro makes]), and the bodies of
# the helpers that return a kernel's name with the calls and assignments that bind a caller's local
# to one (Note [A kernel name a helper returns]): 2,775 lines on 2.6.0 (2,492 before the helpers,
# 2,254 before the names). Whole bodies, which the bundle does not quote, would be
# 13,132 lines of 444 bodies, 117 kB of xz; the lines that give a run or call a live body alone were
# 1,778, 23 kB, before the branches. A body's end is found by
# matching braces over all its lines, so the bundle keeps it (quoted_bodies: the file, the index's
# span, the end) for the live bodies; a body without one is not read, which is the same as reading
# a body that is not live. Then the bundled MPS runs equal the full index's
# (tests/test_bundle_realtree.py).
class TreeLines:
    """Lines of the tree's files at ``root``, each file read once."""

    def __init__(self, root: str):
        self.root = Path(root)
        self._lines: dict[str, list[str]] = {}
        self._defined: dict[tuple[str, str], list[int]] = {}
        self._instances: dict[str, list[tuple[int, str]]] = {}

    def line(self, file: str, n: int) -> str:
        lines = self._text(file)
        return lines[n - 1] if 0 < n <= len(lines) else ""

    def body_end(self, file: str, first: int, last: int) -> int | None:
        return _body_end(self._text(file), first, last)

    def defined(self, file: str, name: str) -> list[int]:
        """The lines of ``file`` that start a definition of the function ``name`` (Note [Helpers the
        index does not define]): at column 0, a type then ``name(``, and a body after it."""
        key = (file, name)
        if key not in self._defined:
            head = _head(name)
            lines = self._text(file)
            self._defined[key] = [n for n, text in enumerate(lines, 1)
                                  if name in text and head.match(text) and _body_end(lines, n, n + _SIGNATURE_LINES)]
        return self._defined[key]

    def defined_natives(self, kernel: str) -> list[tuple[str, int]]:
        """(file, line) of the definitions of the native ``kernel`` (``TORCH_IMPL_FUNC(kernel)`` or a
        function) in the MPS operation files (Note [Helpers the index does not define])."""
        folder = self.root / _MPS_OPERATIONS
        impl = re.compile(rf"TORCH_IMPL_FUNC\({re.escape(kernel)}\)")
        out = []
        for path in sorted(folder.glob("*.mm")) if folder.is_dir() else ():
            rel = f"{_MPS_OPERATIONS}/{path.name}"
            lines = self._text(rel)
            if not any(kernel in text for text in lines):
                continue
            out += [(rel, n) for n in self.defined(rel, kernel)]
            out += [(rel, n) for n, text in enumerate(lines, 1)
                    if impl.match(text) and _body_end(lines, n, n + _SIGNATURE_LINES)]
        return out

    def instances(self, file: str) -> list[tuple[int, str]]:
        """(line, text) of each Metal kernel instantiation of ``file``: a line that names a
        ``host_name`` outside a ``#define``, and each use of a ``#define`` whose body does, expanded
        (Note [Metal kernels a macro instantiates])."""
        if file not in self._instances:
            lines = self._text(file)
            defines, out, inside = set(), [], False
            for n, text in enumerate(lines, 1):
                code = _code(text)
                define = _DEFINE_ANY.match(code)
                if define is not None:
                    defines.add(define.group(1))
                if define is not None or inside:
                    inside = code.rstrip().endswith("\\")
                    continue
                use = _MACRO_USE.match(code)
                if use is not None and use.group(1) in defines:
                    made = self.macro_body(file, n)
                    made = [_nested(made[0], lines)] if made else made
                    if made and _HOST_NAME.search(made[0]):
                        out.append((n, made[0]))
                elif _HOST_NAME.search(code):
                    out.append((n, " ".join(_code(t) for t in lines[n - 1:n + 2])))
            self._instances[file] = out
        return self._instances[file]

    def macro_body(self, file: str, line: int) -> list[str] | None:
        """The lines of the ``#define`` that the macro use at ``line`` of ``file`` expands, its
        arguments put in (Note [Functions a macro makes]), or None when the line is no such use."""
        return _use_expanded(self.line(file, line), self._text(file))

    def metal_lines(self):
        """(file, line, text) of the .metal files, in path order, then of the MPS headers that hold
        Metal source in a string (Note [A kernel name the caller gives])."""
        folder = self.root / _METAL_KERNELS
        for path in sorted(folder.glob("*.metal")) if folder.is_dir() else ():
            rel = f"{_METAL_KERNELS}/{path.name}"
            for n, text in enumerate(self._text(rel), 1):
                yield rel, n, text
        headers = self.root / _MPS_HEADERS
        for path in sorted(headers.glob("*.h")) if headers.is_dir() else ():
            rel = f"{_MPS_HEADERS}/{path.name}"
            for n, text in enumerate(self._text(rel), 1):
                yield rel, n, text
        aten_mps = self.root / _ATEN_MPS
        for path in sorted(aten_mps.glob("*.h")) if aten_mps.is_dir() else ():
            rel = f"{_ATEN_MPS}/{path.name}"
            lines = self._text(rel)
            if any('R"METAL' in text for text in lines):  # IndexKernels.h's R"METAL_GATHER(
                for n, text in enumerate(lines, 1):
                    yield rel, n, text
        operations = self.root / _MPS_OPERATIONS
        for path in sorted(operations.glob("*.mm")) if operations.is_dir() else ():
            rel = f"{_MPS_OPERATIONS}/{path.name}"
            lines = self._text(rel)
            if any(_INLINE_METAL in text for text in lines):
                for n, text in enumerate(lines, 1):
                    yield rel, n, text

    def _text(self, file: str) -> list[str]:
        got = self._lines.get(file)
        if got is None:
            try:
                got = (self.root / file).read_text(errors="replace").splitlines()
            except OSError:
                got = []
            self._lines[file] = got
        return got


class QuotedLines:
    """The lines and body ends the bundled index quotes (Note [MPS lines from the bundle])."""

    def __init__(self, store):
        self.store = store
        self._lines: dict[str, dict[int, str]] = {}
        self._ends: dict[str, dict[tuple[int, int], int]] = {}

    def line(self, file: str, n: int) -> str:
        if file not in self._lines:
            self._lines[file] = self.store.quoted_lines(file)
        return self._lines[file].get(n, "")

    def body_end(self, file: str, first: int, last: int) -> int | None:
        if file not in self._ends:
            self._ends[file] = self.store.quoted_body_ends(file)
        return self._ends[file].get((first, last))

    def defined(self, file: str, name: str) -> list[int]:
        """The quoted definitions of ``name`` in ``file`` that the index lacks: the bundle quotes their
        first line and their end (Note [Helpers the index does not define])."""
        head = _head(name)
        ends = self._body_ends(file)
        return [n for n, text in sorted(self._quoted(file).items())
                if name in text and head.match(text) and (n, n + _SIGNATURE_LINES) in ends]

    def instances(self, file: str) -> list[tuple[int, str]]:
        """The instantiations the bundle quotes, expanded, at their lines (Note [Metal kernels a
        macro instantiates])."""
        return [(n, text) for n, text in sorted(self._quoted(file).items()) if _HOST_NAME.search(text)]

    def defined_natives(self, kernel: str) -> list[tuple[str, int]]:
        impl = re.compile(rf"TORCH_IMPL_FUNC\({re.escape(kernel)}\)")
        out = []
        for file in sorted({f for f, _n, _t in self.store.quoted_lines_under(_MPS_OPERATIONS + "/")}):
            out += [(file, n) for n in self.defined(file, kernel)]
            ends = self._body_ends(file)
            out += [(file, n) for n, text in sorted(self._quoted(file).items())
                    if impl.match(text) and (n, n + _SIGNATURE_LINES) in ends]
        return out

    def _quoted(self, file: str) -> dict[int, str]:
        if file not in self._lines:
            self._lines[file] = self.store.quoted_lines(file)
        return self._lines[file]

    def _body_ends(self, file: str) -> dict[tuple[int, int], int]:
        if file not in self._ends:
            self._ends[file] = self.store.quoted_body_ends(file)
        return self._ends[file]

    def macro_body(self, file: str, line: int) -> list[str] | None:
        """The macro use's expanded runs, which the bundle quotes at the use's line (Note [Functions a
        macro makes]), or None. Where another quote keeps the use's own text there (the bundle keeps
        one text a line), the use is expanded from the ``#define`` lines the bundle quotes."""
        text = self.line(file, line)
        if not text or _line_runs(text):
            return [text] if text else None
        quoted = self._quoted(file)
        made = _use_expanded(text, [quoted.get(n, "") for n in range(1, max(quoted, default=0) + 1)])
        return made if made and any(_line_runs(t) for t in made) else None

    def metal_lines(self):
        for file, n, text in self.store.quoted_lines_under(_METAL_KERNELS + "/"):
            if file.endswith(".metal") and "/" not in file[len(_METAL_KERNELS) + 1:]:
                yield file, n, text
        for file, n, text in self.store.quoted_lines_under(_MPS_HEADERS + "/"):
            if file.endswith(".h") and "/" not in file[len(_MPS_HEADERS) + 1:]:
                yield file, n, text
        for file, n, text in self.store.quoted_lines_under(_ATEN_MPS + "/"):
            if file.endswith(".h") and "/" not in file[len(_ATEN_MPS) + 1:] and _KERNEL_VOID.search(text):
                yield file, n, text
        for file, n, text in self.store.quoted_lines_under(_MPS_OPERATIONS + "/"):
            if file.endswith(".mm") and _KERNEL_VOID.search(text):
                yield file, n, text


Lines = Union[TreeLines, QuotedLines]


def lines_of(root: str | None, store=None) -> Lines | None:
    """The lines graph_runs reads: the bundled index's quotes when ``store`` is given (None when it
    has none: a bundle built before Note [MPS lines from the bundle]), else the tree at ``root``."""
    if store is not None:
        return QuotedLines(store) if store.quotes_bodies() else None
    return TreeLines(root) if root is not None and Path(root).is_dir() else None


def graph_runs(chain: Chain, found: tuple[Run, ...], lines: Lines | None, spans: Spans,
               definitions: Definitions, facts: CallFacts | None = None) -> tuple[Run, ...]:
    """``found`` with, first among each MPS key's runs, the MPSGraph operations and graph runs its
    functions hold (Note [MPSGraph operations by text]), ranked and, with a call's ``facts``, kept
    to those it can take (Note [The branches of an MPS run]); as it was without lines to read."""
    if lines is None:
        return found
    out: list[Run] = []
    for kc in chain.keys:
        own = [r for r in found if r.key == kc.key]
        if kc.key == MPS_KEY and facts is not None and facts.dtype in NO_MPS_DTYPES:
            own = []  # Note [No float64 on MPS]
        elif kc.key == MPS_KEY:
            reader = _Bodies(lines, spans, definitions)
            graph = reader.runs(kc, facts)
            seen = {(r.name, r.loc) for r in graph}
            own = graph + [r for r in own if (r.name, r.loc) not in seen]
        out += own
    out += [r for r in found if r.key not in {kc.key for kc in chain.keys}]
    return tuple(out)


# Note [An if without braces]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# ``if (op_name == "add" || op_name == "lerp")`` on one line and ``return [mpsGraph
# additionWithPrimaryTensor:...]`` on the next (BinaryOps.mm:298-299) is an if whose body is one
# statement without braces; the text reader of the branches (extract/enclosing.py) sees no block
# around the statement, so the send had no branch. For an MPS run, when the code line before the
# run's line ends the condition of an ``if`` (its parentheses matched back, over several lines
# where the condition is long) and the run's line does not open a brace, that ``if`` is the run's
# innermost branch, and a run's line after a lone ``else`` line that follows such an if's statement
# has ``else of if (COND)`` (not added where the reader already gave ``after if (COND) return``,
# which decides the same: the if's statement returned). CUDA's runs keep their reading (this is the
# MPS reader's).


# Note [Runs inside an Objective-C block]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Most MPS kernels encode their work inside a block handed to the stream's queue:
# ``dispatch_sync_with_rethrow(stream->queue(), ^() { @autoreleasepool { ... } });``. The text reader
# of the branches (extract/enclosing.py) reads ``^() {`` as a function's head, as it reads a lambda's,
# so a run inside the block had only the block's own branches: tiled_bmm_out_mps_impl's
# ``MPSNDArrayMatrixMultiplication`` (LinearAlgebra.mm:510) lost its ``if
# (is_macos_13_or_newer(MacOSVersion::MACOS_VER_15_0_PLUS))`` (:465), and an encode or a Metal
# dispatch under an older macOS's branch looked unconditional. A block runs where it is dispatched
# (``dispatch_sync`` waits for it), so the branches around the line that opens each block holding
# the run (braces matched from the body's start; ``^`` then an optional parameter list then ``{``)
# are the run's too, after its own.
_BLOCK_OPEN = re.compile(r"\^\s*(?:\([^()]*\)\s*)?$")


# Note [No float64 on MPS]
# ~~~~~~~~~~~~~~~~~~~~~~~~
# An MPS tensor cannot be float64: empty_mps and empty_strided_mps refuse the dtype
# (aten/src/ATen/mps/EmptyTensor.cpp:45, :104, "Cannot convert a MPS Tensor to float64 dtype"),
# and getMPSDataType, which every MPSGraph placeholder and cast goes through, refuses it too
# (native/mps/OperationUtils.mm:86). That check sits on every path, not in the operator's own code,
# so no run carries it as a branch; a call with ``--dtype float64`` on MPS runs nothing, whatever
# the operator (``runs: ... that this call can take``). The default call (no ``--dtype``) is float32.
NO_MPS_DTYPES = frozenset({"Double"})


# Note [The branches of an MPS run]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# An MPS function picks its graph or Metal kernel as CUDA code picks its launch: ``if (use_metal_mm(
# self, other, output)) return do_metal_mm(...)`` (the Metal path) before the MPSGraph matmul,
# ``if (!is_macos_13_or_newer(MacOSVersion::MACOS_VER_14_0_PLUS))`` (an older macOS's fallback),
# ``if (self.numel() == 0)``, ``if (isFloatingType(...))``. So each run read from a body gets, as its
# reasons:
# - the branches around its line, read as the CUDA runs' are (extract/enclosing.py's text reading,
#   Note [Enclosing branches without a parse]; an Objective-C block ``^(...) {`` reads as a function
#   there, so a send inside one takes the block's own branches);
# - the ``TORCH_CHECK``s before it, in the blocks around it, that test a dtype or the macOS
#   (``TORCH_CHECK(supportedFloatingOrComplexType(self), ...)``): the code after a check runs only
#   where it holds. Shape checks are left out, and so are those that pin one tensor to one dtype
#   (``out_.dtype() == at::kLong``): an output's or an index's dtype, not the call's;
# - those of the call sites in the function that called its function, where every call site has
#   them (binaryOpTensor's runs carry add_sub_lerp_template's).
# An early return whose block calls the function itself (index_select_out_mps's ``if
# (self.is_complex())`` calls it again on ``view_as_real`` views) rules nothing out: the code after
# it runs for that call, so it is not a reason.
# A flag set once in the function (``static const bool is_macOS_15_0_or_newer =
# is_macos_13_or_newer(...)``) stands for its expression, and a call in a condition of a function of
# the same file whose body ends with ``return EXPR;`` (a predicate: ``use_metal_mm``) for EXPR, its
# parameters renamed and its flags added. They are decided as CUDA's (resolve/decide.py, Note [What
# MPS code tests] for the MPS predicates): the runs the default call (float32, fresh tensors, a
# current macOS, no environment variable set) cannot take rank after the rest (an empty input's
# return, an older macOS's path, ``PYTORCH_MPS_PREFER_METAL``'s Metal path); with ``--dtype`` (or
# ``--shape``, ``--example``) the runs that call cannot take are left out, and the rest say whether
# it decided them, as on CUDA. ``Run.when`` shows the first MAX_WHEN. The bundle quotes every line of
# code of the bodies it keeps and of those predicates, so it reads the same branches (Note [MPS lines
# from the bundle]).
_CHECK = re.compile(rb"\bTORCH_CHECK\w*\s*\(")
_CHECKED = re.compile(r"scalar_type|dtype|Type\(|ScalarType::|\bk(?:Float|Double|Half|BFloat16|Long|Int|Short|Char|Byte|Bool"
                      r"|Complex\w+)\b|is_complex|is_floating_point|is_macos|supports\w+\(")
# ``TORCH_CHECK(out_.dtype() == at::kLong)``, ``index.scalar_type() == ScalarType::Long || ...``: one
# tensor pinned to a dtype is an output's or an index's, not the call's dtype; such checks are left out
_PINNED = re.compile(r"==\s*(?:(?:at|c10)::)?(?:ScalarType::|k)[A-Z]\w*")
_OWN_NAME = re.compile(r"([A-Za-z_]\w*)\s*\(")  # the function a body's first line defines (its first call-like name)
_PREDICATE_CALL = re.compile(r"(?<![\w.>])([A-Za-z_]\w*)\s*\(([^()]*)\)")
_LAST_RETURN = re.compile(r"\breturn\s+([^;]+);\s*}\s*$", re.S)


@dataclass(frozen=True)
class _Found:
    """A run read from a body, with every reason that decides it (``Run.when`` shows the first)."""
    run: Run
    reasons: tuple[Reason, ...]


class _Bodies:
    """Function bodies, read once each, through ``lines``."""

    def __init__(self, lines: Lines, spans: Spans, definitions: Definitions):
        self.lines = lines
        self.spans = spans
        self.definitions = definitions
        self._done: dict[tuple[str, int], int] = {}  # body -> the hops it was read with
        self._metal: dict[str, tuple[str, str, int] | None] = {}
        self._texts: dict[tuple[str, int], tuple[TextBranches, dict[str, str]]] = {}
        self._flags_at: dict[tuple[str, int], dict[str, str]] = {}  # a reason's place -> its function's flags
        self._body_at: dict[tuple[str, int], tuple[str, int]] = {}  # a reason's place -> its body
        self._bound: dict[tuple[str, int], dict[str, str]] = {}  # a body -> the literals its caller passes
        self.predicates: set[tuple[str, int, int]] = set()  # (file, first, end) of the predicates read
        self.dtype: str | None = None  # the call's dtype (--dtype), for the names a lookup builds
        self._heads: dict[tuple[str, str], tuple[str, int] | None] = {}
        self._metal_file_list: list[str] | None = None
        self.helper_lines: set[tuple[str, int]] = set()  # the helpers' lines a built name was read from
        self._heads_all: list[tuple[str, str, int]] | None = None
        self._bindings: dict[tuple[str, int], set[frozenset]] = {}  # a body -> the names its callers bound
        self.helper_spans: set[tuple[str, int, int, int]] = set()  # their bodies: (file, first, the index's last, end)

    def runs(self, kc: KeyChain, facts: CallFacts | None = None) -> list[Run]:
        out: list[_Found] = []
        self.dtype = facts.dtype if facts is not None else None
        steps = sorted(_mps_steps(kc.steps), key=lambda sv: len(sv[1]) > 0)  # its own functions read first
        for step, via in steps:
            if step.file and step.line and _MPS_FILE.search(step.file):
                self._read(step.file, step.line, MAX_HOPS, out, via)
        for kernel in _undefined_natives(kc):  # Note [Helpers the index does not define]
            for file, line in self.lines.defined_natives(kernel):
                self._read(file, line, MAX_HOPS, out, (), (), True)
        return self._ranked(out, facts)

    def _ranked(self, found: list["_Found"], facts: CallFacts | None) -> list[Run]:
        """Note [The branches of an MPS run]: the default call's runs first, then the operator's own
        graph first (its operations, then its run), then its operators'; with ``facts``, only the
        runs that call can take, each marked decided or not."""
        default = default_call(MPS_KEY)
        guess = default if facts is None else replace(facts, default=True, device=MPS_KEY)
        context = self.context
        ranked = []
        for i, f in enumerate(found):
            run = f.run
            if facts is not None:
                taken = decide_all(f.reasons, facts, context)
                if taken is False:
                    continue
                run = replace(run, decided="yes" if taken else "undecided")
            off = decide_all(f.reasons, guess, context) is False
            ranked.append(((off, len(run.via) > 0, run.via, run.name == GRAPH_RUN, i), run))
        return [run for _key, run in sorted(ranked, key=lambda kr: kr[0])]

    def context(self, reason: Reason) -> tuple[dict[str, str], dict[str, str]]:
        """decide_all's context: the flags of the function ``reason`` sits in."""
        if reason.loc is None:
            return {}, {}
        at = (reason.loc.file, reason.loc.line)
        return self._flags_at.get(at, {}), self._bound.get(self._body_at.get(at, at), {})

    def _read(self, file: str, line: int, hops: int, out: list["_Found"], via: tuple[str, ...] = (),
              site: tuple[Reason, ...] = (), text_defined: bool = False, bound: dict[str, str] | None = None,
              own: tuple[Reason, ...] | None = None) -> None:
        """Read the body at ``line`` for its runs and follow its calls, ``hops`` into other files;
        ``site``: the reasons of the calls that reach it; ``own``: those of the calls that pass
        ``bound`` alone, for the kernels its lookups name with them (``site`` when None; Note [Each
        caller's own reading of a body])."""
        span = self._text_span(file, line) if text_defined else self._span(file, line)
        own = site if own is None else own
        if span is None:
            self._macro_use(file, line, hops, out, via, site)
            return
        key = (file, span[0])
        before = self._done.get(key)
        known = self._bindings.setdefault(key, set())
        fresh = bool(bound) and bool(known) and frozenset(bound.items()) not in known  # another caller's names
        if fresh:  # Note [Each caller's own reading of a body]
            self._rebound(file, span, bound, out, via, own)
        known.add(frozenset((bound or {}).items()))
        if before is not None and before >= hops and not fresh:
            return
        self._done[key] = max(hops, before or 0)  # read again only to follow its calls deeper (Note [Read once, followed deepest])
        if bound:  # the literals every caller passes alike (Note [A kernel name the caller gives])
            plain = {p: v for p, v in bound.items() if _PLAIN_LITERAL.fullmatch(v)}
            self._bound[key] = {p: v for p, v in self._bound[key].items() if plain.get(p) == v} \
                if key in self._bound else plain
        called: dict[str, list[int]] = {}
        for n in range(span[0], span[1] + 1):
            text = _code(self.lines.line(file, n))
            got = _line_runs(text, _continued(self.lines, file, n)) if before is None else []
            reasons = self._reasons(file, span, n) + site if got else ()
            for role, name, expr in got:
                out.append(_Found(Run(MPS_KEY, role, name, Location(file, n), when=reasons[:MAX_WHEN], via=via), reasons))
                if expr:
                    out += self._looked_up(file, span, n, expr, bound, via,
                                           reasons if own is site else self._reasons(file, span, n) + own)
            for name in _called(text):
                called.setdefault(name, []).append(n)
        if hops > 0:
            self._follow(file, span, called, hops, out, via, site, bound)

    def _follow(self, file: str, span: tuple[int, int], called: dict[str, list[int]], hops: int,
                out: list["_Found"], via: tuple[str, ...], site: tuple[Reason, ...], bound: dict[str, str] | None) -> None:
        """The bodies of the functions a body calls (``called``: name -> its call lines), each read once
        for each set of literals its call sites pass (Note [Each caller's own reading of a body])."""
        for name, sites in called.items():
            defined = self.definitions(name)
            if any(f == file for f, _n in defined):  # Note [A file's own helpers]
                defined = [(f, n) for f, n in defined if f == file]
            for def_file, def_line in defined:
                if _MPS_FILE.search(def_file) and (def_file, def_line) != (file, span[0]):
                    for lits, alike in self._site_literals(file, sites, name, def_file, def_line, bound, span):
                        self._read(def_file, def_line, hops - (def_file != file), out, via,
                                   self._common(file, span, sites) + site, bound=lits,
                                   own=self._common(file, span, alike) + site)
            if not defined:  # Note [Helpers the index does not define]
                for def_line in self.lines.defined(file, name):
                    if def_line != span[0]:
                        for lits, alike in self._site_literals(file, sites, name, file, def_line, bound, span):
                            self._read(file, def_line, hops, out, via, self._common(file, span, sites) + site, True, lits,
                                       self._common(file, span, alike) + site)

    def _site_literals(self, file: str, sites: list[int], name: str, def_file: str, def_line: int,
                       bound: dict[str, str] | None, span: tuple[int, int]) -> list[tuple[dict[str, str], list[int]]]:
        """The literals each call site of ``name`` passes (:meth:`_literals`), the sites that pass the
        same ones together, in the order of their first site."""
        groups: dict[frozenset, tuple[dict[str, str], list[int]]] = {}
        for n in dict.fromkeys(sites):
            lits = self._literals(file, n, name, def_file, def_line, bound, span)
            groups.setdefault(frozenset(lits.items()), (lits, []))[1].append(n)
        return list(groups.values())

    def _looked_up(self, file: str, span: tuple[int, int], n: int, expr: str, bound: dict[str, str] | None,
                   via: tuple[str, ...], reasons: tuple[Reason, ...]) -> list["_Found"]:
        """The Metal kernels the lookup expression ``expr`` at line ``n`` names with ``bound``: a literal
        name's ``kernel void`` and its instantiations, or the instantiations a built name matches."""
        named = _bound_expr(expr, bound) if expr else ""
        if not named:
            return []
        when = reasons[:MAX_WHEN]
        defined = self.metal_definition(named)
        if defined is None:  # Note [Kernel names a format builds]
            return [_Found(Run(MPS_KEY, Role.KERNEL, kname, loc, when=when, via=via), reasons)
                    for kname, loc in self.built_kernels(file, span, n, named, bound)]
        got = [_Found(Run(MPS_KEY, Role.KERNEL, f"kernel void {defined[0]}", Location(defined[1], defined[2]),
                          when=when, via=via), reasons)]
        made = self._instances(defined, named)
        if made:  # Note [Metal kernels a macro instantiates]
            got.append(_Found(Run(MPS_KEY, Role.KERNEL, _instantiated([h for _n, h in made]),
                                  Location(defined[1], made[0][0]), when=when, via=via), reasons))
        return got

    def _literals(self, file: str, site: int, name: str, def_file: str, def_line: int,
                  bound: dict[str, str] | None, span: tuple[int, int] | None = None) -> dict[str, str]:
        """The parameters of ``name`` (defined at ``def_line``) that its call at ``site`` passes a
        string literal, or a parameter of the caller bound to one (Note [A kernel name the caller
        gives])."""
        call = " ".join(_code(self.lines.line(file, n)) for n in range(site, site + _SIGNATURE_LINES))
        head = " ".join(_code(self.lines.line(def_file, n)) for n in range(def_line, def_line + _SIGNATURE_LINES))
        m = re.search(rf"\b{re.escape(name)}\s*(?:<[^<>;(){{}}]*>)?\s*\(", call)
        h = re.search(rf"\b{re.escape(name)}\s*\(", head)
        if m is None or h is None:
            return {}
        args, params = _split_arguments(_enclosed(call[m.end():])), _split_arguments(_enclosed(head[h.end():]))
        if len(args) != len(params):
            return {}
        out = {}
        for a, p in zip(args, params):
            words = _WORDS.findall(p.split("=")[0])
            literal = a if _STRING_LITERAL.fullmatch(a) else (bound or {}).get(a)
            if literal is None and (flag := _BOOL_LITERAL.fullmatch(a)):  # Note [A kernel name a helper returns]
                literal = flag.group(1)
            if literal is None and span is not None and _WORDS.fullmatch(a):
                literal = self._local_name(file, span, site, a)
            if words and literal is not None:
                out[words[-1]] = literal
        if any(not v.startswith('"') for v in out.values()):  # the bundle quotes the call whole
            last = next((k for k in range(site, site + _SIGNATURE_LINES) if ";" in _code(self.lines.line(file, k))), site)
            self.helper_lines.update((file, k) for k in range(site, last + 1))
        return out

    def _rebound(self, file: str, span: tuple[int, int], bound: dict[str, str], out: list["_Found"],
                 via: tuple[str, ...], site: tuple[Reason, ...]) -> None:
        """The kernels a body read before names for another caller's ``bound`` names: View.mm's
        getPipelineState looks up gather kernels for gatherViewTensor, scatter kernels for
        scatterViewTensor (Note [Each caller's own reading of a body]); the runs not found yet."""
        seen = {(f.run.name, f.run.loc) for f in out}
        for n in range(span[0], span[1] + 1):
            for _role, _name, expr in _line_runs(_code(self.lines.line(file, n)), _continued(self.lines, file, n)):
                if not expr:
                    continue
                for f in self._looked_up(file, span, n, expr, bound, via, self._reasons(file, span, n) + site):
                    if (f.run.name, f.run.loc) not in seen:
                        seen.add((f.run.name, f.run.loc))
                        out.append(f)

    def _local_name(self, file: str, span: tuple[int, int], site: int, local: str) -> str | None:
        """The name a caller's local holds when it passes it on: its one assignment before ``site``,
        a helper's result read as the expression it returns (Note [A kernel name a helper returns]),
        as ``(expr)``; None when it has none or several, or the value names no kernel."""
        exprs, lines = self.assigned(file, span, site, local)
        if len(exprs) != 1 or not lines:
            return None
        value = self.helpers_put(file, exprs[0])
        if value == exprs[0] and not _LEADING_LITERAL.match(value):
            return None
        self.helper_lines.update((file, k) for k in lines)
        return f"({value})"

    def _macro_use(self, file: str, line: int, hops: int, out: list["_Found"], via: tuple[str, ...],
                   site: tuple[Reason, ...]) -> None:
        """The runs of a function a macro use at ``line`` makes (Note [Functions a macro makes]): those
        of the macro's body with its arguments put in, at the use's line."""
        made = self.lines.macro_body(file, line)
        if made is None or (file, line) in self._done:
            return
        self._done[(file, line)] = hops
        for text in made:
            for role, name, expr in _line_runs(text):
                out.append(_Found(Run(MPS_KEY, role, name, Location(file, line), when=site[:MAX_WHEN], via=via), site))

    def _common(self, file: str, span: tuple[int, int], sites: list[int]) -> tuple[Reason, ...]:
        """The reasons of the first call site that every call site of one function in a body has
        (add_out_mps calls add_sub_lerp_template under its complex branch and after it: neither holds)."""
        per_site = [self._reasons(file, span, n) for n in dict.fromkeys(sites)]
        common = set.intersection(*({(r.kind, r.text) for r in got} for got in per_site))
        return tuple(r for r in per_site[0] if (r.kind, r.text) in common)

    def _reasons(self, file: str, span: tuple[int, int], n: int) -> tuple[Reason, ...]:
        """The branches around line ``n`` of the body at ``span``, innermost first, then the dtype
        and macOS checks before it (Note [The branches of an MPS run]); none on the bundled index
        (Note [MPS branches on a tree])."""
        if isinstance(self.lines, QuotedLines):
            return ()
        branches, flags = self._body(file, span)
        found = [_unquoted(reason_of(e, file)) for e in branches.around(n)]
        for b in self._blocks(file, span, n):  # Note [Runs inside an Objective-C block]
            found += [r for r in (_unquoted(reason_of(e, file)) for e in branches.around(b))
                      if all(r.text != f.text for f in found)]
        head = self._braceless_if(file, span, n)  # Note [An if without braces]
        if head is not None and all(r.text != head.text and r.text != _after(head) for r in found):
            found.insert(0, head)
        found = [r for r in found if not (r.kind == "return" and self._recurses(file, span, r))]
        found += _checks(branches, file, n)
        for r in found:
            if r.loc is not None:
                self._flags_at[(file, r.loc.line)] = {**self._predicates(r.text, file), **flags}
                self._body_at[(file, r.loc.line)] = (file, span[0])
        return tuple(found)

    def _blocks(self, file: str, span: tuple[int, int], n: int) -> list[int]:
        """The lines that open the Objective-C blocks (``^() {``) holding line ``n`` of the body at
        ``span``, innermost first (Note [Runs inside an Objective-C block])."""
        stack: list[int | None] = []  # each open brace: the line of a block's, else None
        for k in range(span[0], n):
            text = _STRING.sub('""', _code(self.lines.line(file, k)))
            for i, ch in enumerate(text):
                if ch == "{":
                    stack.append(k if _BLOCK_OPEN.search(text[:i]) else None)
                elif ch == "}" and stack:
                    stack.pop()
        return [k for k in reversed(stack) if k is not None]

    def _braceless_if(self, file: str, span: tuple[int, int], n: int) -> Reason | None:
        """``if (COND)`` when the statement at line ``n`` is the whole body of an ``if`` without
        braces whose condition ends on the code line before it (Note [An if without braces])."""
        k = self._code_before(file, span, n)
        text = _code(self.lines.line(file, k)).rstrip()
        if k < span[0] or _code(self.lines.line(file, n)).lstrip().startswith("{"):
            return None
        if text.strip() == "else":  # the else of an if whose statement is the line before it
            inner = self._braceless_if(file, span, self._code_before(file, span, k))
            return replace(inner, kind="else", text=f"else of {inner.text}") if inner is not None and inner.kind == "if" else None
        if not text.endswith(")"):
            return None
        depth, parts = 0, []
        for j in range(k, max(span[0], k - _SIGNATURE_LINES) - 1, -1):
            line = _code(self.lines.line(file, j)) if j != k else text
            for i in range(len(line) - 1, -1, -1):
                depth += {")": 1, "(": -1}.get(line[i], 0)
                if depth == 0:
                    before = line[:i]
                    if not re.search(r"(?:^|[\s};])if\s*$", before):
                        return None
                    cond = " ".join((line[i + 1:] + " " + " ".join(reversed(parts))).split())
                    cond = cond[:-1].rstrip() if cond.endswith(")") else cond
                    return _unquoted(Reason("if", f"if ({cond})", Location(file, j)))
            parts.append(line)
        return None

    def _code_before(self, file: str, span: tuple[int, int], n: int) -> int:
        """The last line before ``n`` in the body at ``span`` that holds code (``span[0] - 1``: none)."""
        k = n - 1
        while k >= span[0] and not _code(self.lines.line(file, k)).strip():
            k -= 1
        return k

    def _recurses(self, file: str, span: tuple[int, int], r: Reason) -> bool:
        """Whether the block of an early return (``after if (self.is_complex()) return``) calls the
        function it is in (index_select_out_mps again on ``view_as_real``): the code after the block
        then runs for that call too, so the branch rules nothing out."""
        head = _OWN_NAME.search(" ".join(self.lines.line(file, k) for k in range(span[0], span[0] + 2)))
        if head is None or r.loc is None:
            return False
        own = re.compile(rf"\b{re.escape(head.group(1))}\s*\(")
        for k in range(r.loc.line + 1, span[1] + 1):
            text = _code(self.lines.line(file, k))
            if own.search(text):
                return True
            if re.search(r"\breturn\b", text):
                return False
        return False

    def _body(self, file: str, span: tuple[int, int]) -> tuple[TextBranches, dict[str, str]]:
        key = (file, span[0])
        if key not in self._texts:
            text = _quoted("\n".join(self.lines.line(file, n) for n in range(span[0], span[1] + 1)).encode())
            self._texts[key] = (TextBranches(text, span[0]), bool_flags(text)[0])
        return self._texts[key]

    def _predicates(self, condition: str, file: str) -> dict[str, str]:
        """``name(args)`` calls in ``condition`` of a function of the same file whose body ends with
        ``return EXPR;`` -> EXPR, its parameters renamed to the arguments, with that body's flags."""
        out: dict[str, str] = {}
        for m in _PREDICATE_CALL.finditer(condition):
            args = [a.strip() for a in m.group(2).split(",") if a.strip()]
            for def_file, def_line in self.definitions(m.group(1)):
                span = self._span(def_file, def_line) if def_file == file else None
                if span is None:
                    continue
                text = "\n".join(_code(self.lines.line(def_file, n)) for n in range(span[0], span[1] + 1))
                body = _LAST_RETURN.search(text)
                head = text[text.find("(") + 1:text.find(")")]
                params = [p.split("=")[0].split()[-1].lstrip("&*") for p in head.split(",") if p.split()]
                if body is None or len(params) != len(args):
                    continue
                expr = " ".join(body.group(1).split())
                for p, a in zip(params, args):
                    expr = re.sub(rf"\b{re.escape(p)}\b", a, expr)
                out.update(self._body(def_file, span)[1])
                out[m.group(0).replace(" ", "")] = f"({expr})"
                self.predicates.add((def_file, *span))
                break
        return out

    def metal_definition(self, expr: str) -> tuple[str, str, int] | None:
        """(kernel name, .metal file, line) of ``kernel void NAME`` for an expression that starts with a
        literal ``"NAME_"``, or None (Note [MPSGraph operations by text])."""
        m = _LITERAL.match(expr)
        if m is None:
            return None
        name = m.group(1)
        if name not in self._metal:
            pattern = re.compile(rf"\bkernel\s+void\s+{re.escape(name)}\s*[(<]")
            self._metal[name] = next(((name, file, n) for file, n, text in self.lines.metal_lines()
                                      if pattern.search(text) and "host_name" not in text), None)
        return self._metal[name]

    def built_kernels(self, file: str, span: tuple[int, int], n: int, expr: str,
                      bound: dict[str, str] | None) -> list[tuple[str, Location]]:
        """(run name, place) of the definitions and instantiations of the kernels whose names the
        lookup ``expr`` at line ``n`` builds (Note [Kernel names a format builds] in metalnames.py)."""
        exprs, _lines = self.assigned(file, span, n, expr)
        exprs = [self.helpers_put(file, e) for e in exprs]  # Note [A kernel name a helper returns]
        patterns = metalnames.name_patterns(exprs, bound, self.dtype)
        if not patterns:
            return []
        found: dict[tuple[str, str], list[tuple[int, str]]] = {}  # (.metal file, kernel) -> (line, host name)
        for mfile in self._metal_files():
            for k, text in self.lines.instances(mfile):
                for host, kernel in metalnames.host_kernels(text):
                    if any(metalnames.pattern_matches(p, host) for p in patterns):
                        found.setdefault((mfile, kernel), []).append((k, host))
        plain = [p for p in patterns if re.fullmatch(r"[A-Za-z_]\w*", p)]
        for name in plain if not found else ():  # a kernel no macro instantiates: its own name
            head = self._head(None, name)
            if head is not None:
                found[(head[0], name)] = []
        heads = {} if found else {kernel: (f, k) for kernel, f, k in self._plain_heads()
                                  if any(metalnames.pattern_matches(p, kernel) for p in patterns)}
        out = [(f"kernel void {kernel}", Location(*head)) for kernel, head in heads.items()]  # gather_kernel_{1..4,n}
        for (mfile, kernel), made in found.items():
            head = self._head(mfile, kernel)
            if head is not None:
                out.append((f"kernel void {kernel}", Location(*head)))
            if made:
                out.append((_instantiated([h for _n, h in made]), Location(mfile, made[0][0])))
        return out

    def assigned(self, file: str, span: tuple[int, int], n: int, expr: str) -> tuple[list[str], list[int]]:
        """The expressions a lookup's argument ``expr`` stands for: those assigned to it before line ``n``
        in the body, when it is a local name (Note [Kernel names a format builds]), else ``[expr]``;
        with the lines read for them."""
        if not re.fullmatch(r"[A-Za-z_]\w*", expr):
            return [expr], []
        assign = re.compile(rf"(?<![\w.>]){re.escape(expr)}\s*=(?!=)\s*(.*)")
        exprs, lines = [], []
        for k in range(span[0], n):
            m = assign.search(_code(self.lines.line(file, k)))
            if m is None:
                continue
            text, j = m.group(1), k
            while ";" not in text and j < min(n - 1, k + _SIGNATURE_LINES):
                j += 1
                text += " " + _code(self.lines.line(file, j))
            exprs.append(" ".join(text.split(";", 1)[0].split()))
            lines += range(k, j + 1)
        return (exprs or [expr]), lines

    def helpers_put(self, file: str, expr: str, depth: int | None = None) -> str:
        """``expr`` with each part (``+``-joined) that calls a function of ``file`` returning a string
        made the expression it returns, with the call's arguments (Note [A kernel name a helper
        returns]); the lines read are noted in ``helper_lines`` (the bundle quotes them)."""
        depth = _HELPER_DEPTH if depth is None else depth
        if depth <= 0:
            return expr
        parts = metalnames.top_split(expr, "+")
        out = []
        for part in parts:
            m = _HELPER_CALL.fullmatch(metalnames.unwrap(part))
            got = self._returned(file, m.group(1), m.group(2)) if m else None
            out.append(f"({self.helpers_put(file, got, depth - 1)})" if got else part)
        return " + ".join(out) if len(parts) > 1 or out != parts else expr

    def _returned(self, file: str, name: str, args: str) -> str | None:
        """The expression the function ``name`` of ``file`` returns for a call with ``args``, or None."""
        firsts = [n for f, n in self.definitions(name) if f == file] or self.lines.defined(file, name)
        if name in _NOT_HELPERS or not firsts:
            return None
        span = self._span(file, firsts[0])
        last = max((b for a, b in self.spans(file) if a == span[0]), default=0) if span else 0
        span, last = (span, last) if span else (self._text_span(file, firsts[0]), firsts[0] + _SIGNATURE_LINES)
        if span is None:
            return None
        self.helper_spans.add((file, span[0], last, span[1]))
        text = "\n".join(_code(self.lines.line(file, k)) for k in range(span[0], span[1] + 1))
        h = re.search(rf"\b{re.escape(name)}\s*\(", text)
        if h is None or _enclosed(args + ")") != args:
            return None
        inner = _enclosed(text[h.end():])
        params = [w[-1] for p in _split_arguments(inner) if (w := _WORDS.findall(p.split("=")[0]))]
        self.helper_lines.update((file, k) for k in range(span[0], span[1] + 1))
        args = [" ".join(_BLOCK_COMMENT.sub(" ", a).split()) for a in _split_arguments(args)]  # /*needsScatter=*/true
        return metalnames.returned(text[h.end() + len(inner) + 1:], params, [a for a in args if a])

    def _plain_heads(self) -> list[tuple[str, str, int]]:
        """(kernel, file, line) of every ``kernel void NAME(`` the Metal sources define, in their order."""
        if self._heads_all is None:
            self._heads_all = [(name, f, k) for f, k, t in self.lines.metal_lines()
                               if (name := metalnames.head_name(_code(t), self.lines.line(f, k - 1)))]
        return self._heads_all

    def _metal_files(self) -> list[str]:
        if self._metal_file_list is None:
            self._metal_file_list = sorted({f for f, _n, _t in self.lines.metal_lines() if f.endswith(".metal")})
        return self._metal_file_list

    def _head(self, mfile: str | None, kernel: str) -> tuple[str, int] | None:
        """(file, line) of the definition of the Metal kernel ``kernel``: in ``mfile`` first, then in any
        .metal file (metalnames.is_head)."""
        key = (mfile or "", kernel)
        if key not in self._heads:
            lines = [(f, k, t) for f, k, t in self.lines.metal_lines() if f.endswith(".metal")]
            lines.sort(key=lambda fkt: fkt[0] != mfile)
            self._heads[key] = next(((f, k) for f, k, t in lines
                                     if kernel in t and metalnames.is_head(_code(t), self.lines.line(f, k - 1), kernel)),
                                    None)
        return self._heads[key]

    def _instances(self, defined: tuple[str, str, int], expr: str) -> list[tuple[int, str]]:
        """(line, host name) of the instantiations in the definition's file of the kernel ``defined``
        names whose host name starts with the lookup's literal (Note [Metal kernels a macro
        instantiates])."""
        name, file, _line = defined
        literal = _LEADING_LITERAL.match(expr)
        if literal is None:
            return []
        kernel = re.compile(rf"\bkernel\s+void\s+{re.escape(name)}\s*<")
        out = []
        for n, text in self.lines.instances(file):
            host = _HOST_NAME.search(text)
            if host is None or not kernel.search(text):
                continue
            got = "".join(re.findall(r'"([^"]*)"', host.group(1)))
            if got.startswith(literal.group(1)):
                out.append((n, got))
        return out

    def _text_span(self, file: str, line: int) -> tuple[int, int] | None:
        """The body of a function whose definition starts at ``line`` by the text alone (Note
        [Helpers the index does not define])."""
        end = self.lines.body_end(file, line, line + _SIGNATURE_LINES)
        return (line, end) if end else None

    def _span(self, file: str, line: int) -> tuple[int, int] | None:
        """The function that starts at (or holds) ``line``, its end found by matching braces: the
        index's end of a function whose body has message sends may stop short (ERROR regions)."""
        spans = [(a, b) for a, b in self.spans(file) if a == line] or [(a, b) for a, b in self.spans(file) if a <= line <= b]
        if not spans:
            return None
        first, last = max(spans)
        end = self.lines.body_end(file, first, last)
        return (first, end) if end else None


def _line_runs(text: str, continued: str = "") -> list[tuple[Role, str, str]]:
    """(role, run name, looked-up expression or "") of the runs one line's code holds; ``continued``:
    the code of the lines after it that a lookup's argument runs on to (_continued)."""
    out: list[tuple[Role, str, str]] = []
    for m in _SEND.finditer(text):
        if not m.group(1).startswith(_INPUT):
            out.append((Role.LIBRARY, f"MPSGraph {m.group(1)}", ""))
    run = _RUN.search(text)
    if run and not _declared(text, run.start()):
        out.append((Role.LIBRARY, GRAPH_RUN, ""))
    lookup = _LOOKUP.search(text)
    if lookup and "::getPipelineStateForFunc" not in text:  # a call, not MetalShaderLibrary's definition
        expr = _argument(lookup.group(1) + continued)
        if expr and expr != "name":  # OperationUtils.mm's own wrapper passes its parameter on
            out.append((Role.LAUNCH, METAL_LOOKUP + expr, expr))
    dispatch = _DISPATCH.search(text)
    if dispatch and not (dispatch.group(1) and _declared(text, dispatch.start())):
        out.append((Role.LAUNCH, METAL_DISPATCH, ""))
    for m in _MPS_KERNEL.finditer(text):  # Note [MPS library kernels]
        family = next((f for word, f in _MPS_FAMILIES if word in m.group(1)), "")
        out.append((Role.LIBRARY, MPS_LIBRARY + m.group(1) + (f" ({family})" if family else ""), ""))
    for m in _MPS_ENCODE.finditer(text):
        if not re.search(r"[gG]raph$", m.group(1)):
            out.append((Role.LIBRARY, MPS_LIBRARY + m.group(2), ""))
    return out


_CONTINUED_LINES = 3


def _continued(lines: "Lines", file: str, n: int) -> str:
    """The code of the lines after ``n`` that the argument of a lookup on line ``n`` runs on to, when
    its parenthesis stays open at the line's end (``getPipelineStateForFunc(`` then ``fmt::format(...)``
    on the next line, SpecialOps.mm:28; Note [Kernel names a format builds]), else ""."""
    return "".join(" " + _code(lines.line(file, k)) for k in _continuation(lines, file, n))


def _continuation(lines: "Lines", file: str, n: int) -> list[int]:
    """The lines _continued reads."""
    lookup = _LOOKUP.search(_code(lines.line(file, n)))
    if lookup is None:
        return []
    depth = 1
    for ch in lookup.group(1):
        depth += {"(": 1, ")": -1}.get(ch, 0)
    out: list[int] = []
    for k in range(n + 1, n + 1 + _CONTINUED_LINES) if depth > 0 else ():
        text = _code(lines.line(file, k))
        out.append(k)
        depth += text.count("(") - text.count(")")
        if depth <= 0:
            break
    return out


# Note [A run's name in its own definition]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# The Metal dispatch helper is itself a function the reading follows: ``mtl_dispatch1DJob(encoder,
# ...)`` called in gatherViewTensor leads to its body in OperationUtils.h, whose
# ``[encoder dispatchThreads:...]`` is the dispatch. Its first line, ``static inline void
# mtl_dispatch1DJob(id<MTLComputeCommandEncoder> encoder,``, is the definition, not a dispatch: a
# name preceded by a type (a word other than a statement keyword, then spaces or ``*``/``&``) is
# declared there, not called (2.6.0 listed OperationUtils.h:420 as a ``Metal dispatch`` for every
# operator that copies a view).
_DECLARED = re.compile(r"(?<![\w:])(?!(?:return|else|do|case|throw|co_return)\b)[A-Za-z_][\w:<>,]*[\s*&]+$")


def _declared(text: str, at: int) -> bool:
    """Whether the name starting at ``at`` in a line's code is declared there (Note [A run's name in
    its own definition])."""
    return _DECLARED.search(text[:at]) is not None


# A string literal of plain words (``op_name == "lerp"``) is kept in a condition's text: written
# with other quotes, which the masking of extract/enclosing.py does not blank, and given back.
_PLAIN_STRING = re.compile(rb'"[\w .:+-]*"')
_OPEN, _CLOSE = "\u201c", "\u201d"


def _quoted(src: bytes) -> bytes:
    """``src`` with each plain string literal's quotes made ``“”`` (comments and other literals as written)."""
    return CODE_NOISE.sub(lambda m: (_OPEN.encode() + m.group(0)[1:-1] + _CLOSE.encode()
                                     if _PLAIN_STRING.fullmatch(m.group(0)) else m.group(0)), src)


def _unquoted(r: Reason) -> Reason:
    return replace(r, text=r.text.replace(_OPEN, '"').replace(_CLOSE, '"')) if _OPEN in r.text else r


def _after(r: Reason) -> str:
    """``after if (COND) return``: what the branch reader says of the statement after an ``if``
    whose body returns, which decides as ``else of if (COND)`` does (Note [An if without braces])."""
    return "after " + r.text.removeprefix("else of ") + " return"


def _checks(branches: TextBranches, file: str, n: int) -> list[Reason]:
    """``after TORCH_CHECK(COND)`` for each check before line ``n`` in a block around it whose COND
    tests a dtype or the macOS, nearest first (Note [The branches of an MPS run])."""
    masked, src = branches.masked, branches.src
    stop = branches.line_start(n - branches.offset)
    out: list[Reason] = []
    for m in _CHECK.finditer(masked, 0, stop):
        depth = 0
        for ch in masked[m.end():stop].translate(None, bytes(b for b in range(256) if b not in b"{}")):
            depth += 1 if ch == 0x7B else -1
            if depth < 0:
                break
        end = _argument_end(masked, m.end())
        if depth < 0 or end < 0 or end > stop:
            continue
        cond = " ".join(src[m.end():end].decode("utf-8", "replace").split())
        if _CHECKED.search(cond) and not _PINNED.search(cond):
            macro = masked[m.start():m.end()].decode().rstrip("( ")
            out.append(_unquoted(Reason("check", f"after {macro}({cond})", Location(file, branches.line_of(m.start())))))
    return out[::-1]


def _argument_end(text: bytes, at: int) -> int:
    """Where the first argument of a call whose ``(`` is just before ``at`` ends (its ``,`` or ``)``)."""
    depth = 0
    for i in range(at, len(text)):
        ch = text[i]
        if ch in b"([{":
            depth += 1
        elif ch in b")]}":
            if depth == 0:
                return i
            depth -= 1
        elif ch == 0x2C and depth == 0:
            return i
    return -1


def _called(text: str) -> list[str]:
    """The names one line's code calls (``f(...)``), but runMPSGraph."""
    return [m.group(1) for m in _CALLED.finditer(text) if m.group(1) != GRAPH_RUN and not _declared(text, m.start(1))]


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'')


def _body_end(lines: list[str], first: int, last: int) -> int | None:
    """The line of the ``}`` that closes the body opened between lines ``first`` and ``last`` (the
    index's span; strings and ``//`` comments skipped), or None: a function a macro makes
    (``CREATE_MPS_..._FUNC(neg_out_mps, negative)``) has no body here to read."""
    depth, opened = 0, False
    for n in range(first, len(lines) + 1):
        if not opened and n > last:
            return None
        text = _STRING.sub('""', _code(lines[n - 1]))
        for ch in text:
            if ch == "{":
                depth, opened = depth + 1, True
            elif ch == "}" and opened:
                depth -= 1
                if depth == 0:
                    return n
        if not opened and text.rstrip().endswith(";"):
            return None  # a declaration
    return None


# Note [Helpers the index does not define]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# tree-sitter-cpp does not read Objective-C, and a ``.mm`` helper whose body it cannot fit has no
# function fact: 2.6.0's ``scatter_mps_general`` (ScatterGather.mm:111, called by the four scatter
# natives) and ``upsample_out_template`` (UpSample.mm:43, the nearest/bilinear upsamplings) were never
# read, so those operators ran nothing. A name a body calls that the index defines nowhere is looked
# for in the caller's own file as text: a line at column 0 that is a type and then ``name(`` (a
# ``template <...>`` first allowed) and whose body follows within _SIGNATURE_LINES lines (a
# prototype ends with ``;`` and has none). A call with explicit template arguments,
# ``mps::random_mps_impl<bool>(...)`` (the distributions), is a call of ``random_mps_impl`` too. A
# native itself can be lost the same way (2.6.0: layer_norm_backward_mps, huber_loss_out_mps,
# huber_loss_backward_out_mps, the LSTM's, index_add_mps_out): the chain warns that it found no
# definition, and its runs are read from the ``TORCH_IMPL_FUNC(kernel)`` or column-0 definition of
# that name in native/mps/operations/*.mm (the tree keeps its warning: the index has no step for
# it). The bundle quotes their first lines and ends too (Note [MPS lines from the bundle]).
_SIGNATURE_LINES = 24
_HEAD = r"(?:template\s*<[^;]*>\s*)?(?:[A-Za-z_][\w:<>,]*[\s*&]+)+"  # a column-0 type before a name


def _head(name: str) -> re.Pattern:
    """A column-0 definition of the function ``name`` (its first line)."""
    return re.compile(rf"{_HEAD}{re.escape(name)}\s*\(")

# Note [Functions a macro makes]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# UnaryOps.mm and BinaryOps.mm make most of their natives with one macro each:
# ``CREATE_MPS_STRUCTURED_UNARY_TORCH_IMPL_FUNC(reciprocal_out_mps, reciprocal)`` expands
# ``TORCH_IMPL_FUNC(func_out)(...) { mps::unary_op(..., ^(...) { return [mpsGraph
# func_stub##WithTensor:inputTensor name:nil]; }); }``. The native's step is the use's line, which
# holds no body. When a chain step's line is such a use (``NAME(args)`` alone on its line) and the
# same file has ``#define NAME(params)``, its body's lines (to the last ``\``) are read as one line,
# as the preprocessor does, with each parameter replaced by its argument (``p##X``, ``X##p``, ``#p``
# and ``p``; ``[mpsGraph func_stub##`` ending one line and ``WithPrimaryTensor:`` starting the next
# paste into ``logicalANDWithPrimaryTensor``), and each run it gives is shown at the use's line:
# ``MPSGraph reciprocalWithTensor`` at UnaryOps.mm:226, where the operation's name is spelled. The
# bundle quotes, at the use's line, the expanded macro (quoted_rows), and reads it from there; where
# another quote keeps that line as written (the bundle keeps one text a line, earlier quotes first),
# it expands the use from the ``#define``'s lines, which it quotes too (2.6.0's ceil, floor and round
# natives: UnaryOps.mm:214-216, which the branch quotes keep as written). The functions
# the body calls are not followed from here: the index reads the use as the native and its calls
# (``unary_op``) are the chain's own helper steps, read from there.
_ANY_HEAD = re.compile(rf"{_HEAD}([A-Za-z_]\w*)\s*\(|TORCH_IMPL_FUNC\(([A-Za-z_]\w*)\)")
_KERNEL_VOID = re.compile(r"\bkernel\s+void\s+\w+")

# Note [Metal kernels a macro instantiates]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A templated Metal kernel runs as the instantiations its .metal file makes, each under the name a
# lookup asks for and a profile shows: ``INSTANTIATE_NAIVE_MM(float);`` (kernels/LinearAlgebra.metal:44)
# expands ``template [[host_name("naive_matmul_" #DTYPE)]] kernel void naive_matmul<DTYPE>(...)``,
# the kernel ``naive_matmul_float`` that ``getPipelineStateForFunc("naive_matmul_" + ...)`` loads.
# After a lookup's ``kernel void`` definition, the uses of the file's ``#define``s whose body names a
# ``host_name`` are expanded (Note [Functions a macro makes]'s reading), as are the ``host_name``
# lines written out; those that instantiate the same kernel (``kernel void NAME<``) under a host name
# starting with the lookup's literal are one ``kernel`` run, ``instantiated as naive_matmul_float,
# naive_matmul_half, naive_matmul_bfloat``, at the first one's line (``tril`` and ``triu`` share
# TriangularOps.metal's macro: each lookup keeps its own). The bundle quotes those expanded uses at
# their lines (quoted_rows).
_HOST_NAME = re.compile(r"host_name\(((?:\s*\"[^\"]*\"\s*)+)\)")
_LEADING_LITERAL = re.compile(r'\s*"([^"]*)"')
_DEFINE_ANY = re.compile(r"\s*#\s*define\s+([A-Za-z_]\w*)")
_MAX_HOSTS = 4


def _instantiated(hosts: list[str]) -> str:
    """The run name of a kernel's instantiations: ``instantiated as a_float, a_half, …``."""
    return "instantiated as " + ", ".join(hosts[:_MAX_HOSTS]) + (", …" if len(hosts) > _MAX_HOSTS else "")


_MACRO_USE = re.compile(r"\s*([A-Z_][A-Z0-9_]*)\s*\((.*)\)\s*;?\s*$")
_DEFINE = re.compile(r"\s*#\s*define\s+([A-Z_][A-Z0-9_]*)\(([^)]*)\)")


def _use_expanded(use_text: str, lines: list[str]) -> list[str] | None:
    """The lines of the ``#define`` (in ``lines``, a file's) that the macro use ``use_text`` expands,
    its arguments put in (Note [Functions a macro makes]), as one logical line; None when the text is
    no such use or the file has no such ``#define``."""
    use = _MACRO_USE.match(_code(use_text))
    if use is None:
        return None
    args = _split_arguments(use.group(2))
    for n, text in enumerate(lines, 1):
        if not _DEFINE_ANY.match(text) or _DEFINE_ANY.match(text).group(1) != use.group(1):
            continue
        body = [text]
        while body[-1].rstrip().endswith("\\") and n < len(lines):
            body[-1] = body[-1].rstrip()[:-1]
            body.append(lines[n])
            n += 1
        logical = " ".join(_code(b) for b in body)  # one logical line: ## pastes across its continuations
        define = _DEFINE.match(logical)
        if define is None:
            return None
        params = [p.strip() for p in define.group(2).split(",")]
        if len(params) != len(args):
            return None
        return [_expanded(logical[define.end():], params, args)]
    return None


def _nested(text: str, lines: list[str], depth: int = 3) -> str:
    """A macro's expanded text with the uses of the file's other macros in it expanded too, ``depth``
    deep (Indexing.metal's ``REGISTER_INDEX_OP_ALL_DTYPES(select)`` is eight ``REGISTER_INDEX_OP(...)``;
    Note [Metal kernels a macro instantiates])."""
    if depth <= 0 or not _MACRO_USE.search(text):
        return text
    out = []
    for part in metalnames.top_split(text, ";"):
        made = _use_expanded(part, lines) if _MACRO_USE.fullmatch(part) else None
        out.append(_nested(made[0], lines, depth - 1) if made else part)
    return "; ".join(out)


def _define_lines(use_text: str, lines: list[str]) -> list[int]:
    """The lines of the ``#define`` (to its last ``\\``) that the macro use ``use_text`` expands."""
    use = _MACRO_USE.match(_code(use_text))
    for n, text in enumerate(lines, 1) if use is not None else ():
        define = _DEFINE.match(text)
        if define is not None and define.group(1) == use.group(1):
            k = n
            while lines[k - 1].rstrip().endswith("\\") and k < len(lines):
                k += 1
            return list(range(n, k + 1))
    return []


def _split_arguments(text: str) -> list[str]:
    """A macro use's (or a call's) arguments, split at the top-level commas; ``[""]`` for none."""
    return macros.split_args(text) or [""]


def _expanded(text: str, params: list[str], args: list[str]) -> str:
    """A ``#define`` line with its parameters replaced by the use's arguments."""
    for p, a in zip(params, args):
        text = re.sub(rf"\s*##\s*\b{re.escape(p)}\b|\b{re.escape(p)}\b\s*##\s*", a, text)
        text = re.sub(rf"(?<!#)#\s*{re.escape(p)}\b", f'"{a}"', text)
        text = re.sub(rf"\b{re.escape(p)}\b", a, text)
    return text


# Note [A kernel name the caller gives]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# UnaryKernel.mm's exec_unary_kernel looks its kernel up as ``lib.getPipelineStateForFunc(name +
# "_kernel", ...)``; ``name`` is its parameter, and each native passes a literal
# (``exec_unary_kernel(self, output_, "tanh")``). When a function is followed from a call, the
# parameters that call passes a string literal (or a parameter of its own that is bound so) are
# bound to it, and a lookup's expression is read with them: ``"tanh" + "_kernel"``, adjacent literals
# joined, names the kernel ``tanh_kernel``. Its ``kernel void tanh_kernel(`` is not in a .metal file
# but in the Metal source that UnaryConstants.h holds in a string (UNARY_KERNEL_TEMPLATE, compiled at
# run time): the MPS headers (native/mps/*.h), then the .mm files that hold their own Metal source in
# an ``R"METAL(`` string (Gamma.mm's ``kernel void digamma (``, for ``getCPLState(self, output,
# "digamma")``), are searched after the .metal files. The run keeps the
# expression as written. The bundle quotes the header of each body with a lookup and the headers'
# ``kernel void`` lines (Note [MPS lines from the bundle]). The same literals decide the body's
# branches on them (decide.py's bound arguments): add_out_mps passes ``"add"`` to
# add_sub_lerp_template, so its ``if (op_name == "lerp")`` is false and the subtraction after
# ``if (op_name == "add" || op_name == "lerp") return`` is dead for add.out.
_STRING_LITERAL = re.compile(r'"[^"\\]*"')
_BOOL_LITERAL = re.compile(r"(?:/\*.*?\*/\s*)?(true|false)")  # ``/*index_select=*/true``
_PLAIN_LITERAL = re.compile(r'"[\w .:+-]*"')  # the literals a condition's text keeps (_quoted)
_WORDS = re.compile(r"[A-Za-z_]\w*")


def _enclosed(rest: str) -> str:
    """The text of an argument list whose ``(`` is just before ``rest``, to its ``)``."""
    depth = 0
    for i, ch in enumerate(rest):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                return rest[:i]
            depth -= 1
    return rest


def _bound_expr(expr: str, bound: dict[str, str] | None) -> str:
    """``expr`` with its bound parameters made their literals and adjacent literals joined
    (``name + "_kernel"`` -> ``"tanh_kernel"``; Note [A kernel name the caller gives])."""
    if not bound:
        return expr
    for p, literal in bound.items():
        if not literal.startswith('"'):
            continue  # a flag decides a built name's ternaries only (Note [A kernel name a helper returns])
        expr = re.sub(rf"(?<![\w.\"]){re.escape(p)}\b", literal, expr)
    return re.sub(r'"([^"\\]*)"\s*\+\s*"([^"\\]*)"', r'"\1\2"', expr)


# Note [A kernel name a helper returns]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Indexing.mm's dispatchIndexKernel looks up ``getIndexFunctionName(inputTensor.scalar_type(),
# index_select, accumulate, serial_index_put, use_64bit_indexing)``, a static function of the same
# file that builds the name in a local: ``std::string indexFunction = index_select ? "index_select_"
# : ...; indexFunction += getBitSizeString(scalar_type); if (accumulate) { ... indexFunction +=
# dtypeString; } indexFunction += use_64bit_indexing ? "_idx64" : "_idx32"; return indexFunction;``.
# A part of a lookup's name (after Note [Kernel names a format builds]'s assignments) that calls a
# function the same file defines is read as the expression that function returns
# (metalnames.returned): the returned local's first ``=``, then each ``+=`` to it (one inside ``if
# (c) {`` as ``(c ? X : "")``), its other locals and its parameters put in as the call's arguments;
# a part of that which calls another such function is read the same way (getBitSizeString's
# ``std::to_string(scalarBitSize) + "bit"``, scalarBitSize being ``c10::elementSize(scalar_type) *
# 8``), _HELPER_DEPTH deep. The caller's ``true``/``false`` arguments are bound like its literals
# (index_kernel_mps calls ``dispatchIndexKernel(..., /*index_select=*/true, /*accumulate=*/false)``)
# and decide the ternaries and ``if``s of the name; with ``--dtype``, the first tensor whose type the
# name reads takes it, and so does every later read of that tensor: ``scalarToMetalTypeString(t)``,
# ``c10::elementSize(t) * 8`` (its size in bits) and ``t == ScalarType::Float`` / ``t != kBool``;
# another tensor's type (an output's, an index's) stays a wildcard. So index.Tensor_out reads
# ``index_select_\w*bit(?:_idx64|_idx32)``, with float16 ``index_select_16bit(?:_idx64|_idx32)``,
# matched to the host names that Indexing.metal's nested macros instantiate (Note [Metal kernels a
# macro instantiates]). The flags bind nothing else: a lookup's text keeps its names, and a body's
# branches are decided by its string literals only. A caller's local passed to a parameter (Note [A
# kernel name the caller gives]) is bound to what its one assignment before the call holds when
# that is a helper's result or starts with a literal: View.mm's gatherViewTensor passes
# ``functionName = getGatherScatterFunctionName(output.scalar_type(), output.dim(),
# /*needsScatter=*/false)`` to getPipelineState(kernel, ...), whose lookup then names
# ``gather_kernel_(?:\w*|n)``. A pattern no instantiation matches is matched against the plain
# ``kernel void NAME(`` definitions of the Metal sources, those of aten/src/ATen/mps/*.h's Metal
# strings among them (IndexKernels.h's gather_kernel_1..4, _n). A body reached by several callers
# is read for each one's literals: Note [Each caller's own reading of a body].
_HELPER_DEPTH = 3


# Note [Each caller's own reading of a body]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A helper's runs are read once (one run per line), but the names its lookups build and the bodies
# it calls depend on what each caller passes (Note [A kernel name the caller gives], Note [A kernel
# name a helper returns]). View.mm's getPipelineState is reached from gatherViewTensor with
# ``/*needsScatter=*/false`` and from scatterViewTensor with ``true`` (345 of 2.6.0's 707 MPS
# operators reach both, through ``copy_``). So:
# - the call sites of one function in a body are grouped by the literals they pass, and the callee
#   is followed once per group, where the first site alone chose before: its runs keep the branches
#   every site shares, as before, and the kernels each group's literals name get the branches that
#   group's sites share (``if (c) f(x, true); else f(x, false);``: each kernel under its own
#   branch). ScatterGather.mm's scatter_reduce_two_mps_kernel calls scatter_mps_general with "add",
#   "prod", "amin" and "amax" under four cases: it is read for each (no kernel name, so the same runs);
# - a body reached again with literals not seen before (another caller's) adds the kernels its
#   lookups name for them (_rebound: a literal name's ``kernel void`` as well as a built name's
#   instantiations), with that caller's branches, and follows its calls again with them, so a lookup
#   a call further down names for the second caller too (before, only the body's own lookups were
#   read again, and a callee one call down kept the first caller's name);
# - the string literals that decide the body's branches (``if (op_name == "lerp")``) are those
#   every caller that binds any passes alike: a branch on a parameter the callers bind differently
#   is undecided, not decided by whichever caller came first.
# The runs themselves are not repeated: a line's run keeps the first reading's branches.
_BLOCK_COMMENT = re.compile(r"/\*.*?\*/")
_HELPER_CALL = re.compile(r"(?:\w+::)*([A-Za-z_]\w*)\s*\((.*)\)", re.S)
_NOT_HELPERS = {"scalarToMetalTypeString", "format", "to_string", "string", "getMetalType"}


# Note [A file's own helpers]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# An MPS operation file keeps its helpers ``static``, and several files reuse a name: BitwiseOps.mm
# and Gamma.mm each define ``getCPLState``. A call made in a file that defines the name is a call of
# that file's definition only (bitwise_right_shift no longer reads Gamma.mm's lookup). A file's own
# helpers are part of its kernels, so following one costs no hop; MAX_HOPS counts the steps into
# other files (OperationUtils.mm, View.mm). bitwise_right_shift's stub kernel reaches its Metal lookup
# four same-file calls down (rshift_kernel_mps -> _bitwise_op_out_mps ->
# handle_tensor_tensor_binary_op -> getCPLState, BitwiseOps.mm:159).


# Note [Read once, followed deepest]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A body is read once for its runs, but a body reached first from far away (few hops left) is read
# again, for its calls only, when the chain reaches it with more hops: bernoulli_mps_(Tensor) called
# bernoulli_mps_impl only after its other overload had read it with no hops left, so the
# random_mps_impl<bool> it calls (randomTensorWithShape, runMPSGraph) was never read. A name in a
# function's own header (``Tensor& bernoulli_mps_(...)``) is declared, not called (Note [A run's
# name in its own definition]).


def _argument(rest: str) -> str:
    """The first argument of a call whose text after ``(`` is ``rest`` (to its closing parenthesis or
    the end of the line), spaces squeezed."""
    depth, out = 0, []
    for ch in rest:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                break
            depth -= 1
        elif ch == "," and depth == 0:
            break
        out.append(ch)
    return " ".join("".join(out).split())


def _code(line: str) -> str:
    """A line without its ``//`` comment (a send in a comment runs nothing)."""
    return line.split("//", 1)[0]


def _undefined_natives(kc: KeyChain) -> list[str]:
    """The MPS kernels the key's yaml steps name for which the chain found no native definition."""
    out = []
    for step in kc.steps:
        if step.role != Role.YAML or not step.detail.startswith(f"{MPS_KEY}: "):
            continue
        stack, native = list(step.children), False
        while stack and not native:
            s = stack.pop()
            native = s.role in (Role.NATIVE, Role.GENERATED)
            stack += s.children
        if not native:
            out.append(step.detail[len(MPS_KEY) + 2:].split(" ")[0])
    return out


def _mps_steps(steps: tuple[Step, ...]):
    """(step, the operators called on the way to it) for the native and helper steps of a key's tree;
    the operator's own steps come first in the runs, those of operators it calls (a composite's, or
    copy_ for an out= result) after, labelled ``via`` them like the other runs."""
    stack = [(s, ()) for s in reversed(steps)]
    while stack:
        s, via = stack.pop()
        if s.role in _READ_ROLES:
            yield s, via
        below = via + (f"aten::{s.symbol.removeprefix('aten::')}",) if s.role == Role.OP_CALL else via
        stack += [(c, below) for c in reversed(s.children)]


def definitions_of(store) -> Definitions:
    """(file, line) of the functions an index defines under a name: where _Bodies follows a call."""
    from atenmap.kinds import FactKind

    return lambda name: [(r.file, r.line) for r in store.by_name(name, (FactKind.FUNCTION,))]


def _coded(tree: TreeLines, path: str, first: int, end: int) -> list[tuple[str, int]]:
    """The lines ``first`` to ``end`` of ``path`` that hold code (a blank or comment line reads as
    the blank line a quote leaves out)."""
    return [(path, n) for n in range(first, end + 1) if _code(tree.line(path, n)).strip()]


# Note [MPS branches on a tree]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# The branches of an MPS run are read from the whole body around it (Note [The branches of an MPS
# run]). The bundled index would have to quote every code line of the 444 live MPS bodies for that
# (13,132 lines): close to shipping PyTorch's MPS sources, which this repository does not do. So
# the bundle quotes only the lines that give a run or lead to one, as before, and its MPS runs carry
# no branches: the same runs, in the order their bodies give them, with no ``when``; ``--dtype``
# keeps them all. A tree (``atenmap fetch``) gives the branches.
def quoted_rows(store, root: str) -> tuple[list[tuple[str, int, str]], list[tuple[str, int, int, int]]]:
    """What the bundle keeps for Note [MPS lines from the bundle], read from the tree at ``root`` by
    the bundle builder: (path, line, text) of the lines of the MPS files' function bodies that give a
    run or call a live function, and of the ``kernel void`` lines their lookups find; and (path,
    first, last, end) of each live body (the index's span, the line closing it). A body is live when
    it, or a body it calls by name (at any depth), gives a run; reading the others gives nothing and
    marks only bodies that give nothing as read, so the bundle leaves them out."""
    tree = TreeLines(root)
    definitions = definitions_of(store)
    bodies = _Bodies(tree, store.function_spans, definitions)
    spans: dict[tuple[str, int], tuple[int, int]] = {}  # (path, first) -> (the index's last, the body's end)
    runs: dict[tuple[str, int], list[int]] = {}  # body -> its lines that give a run
    calls: dict[tuple[str, int], list[tuple[int, list[str]]]] = {}  # body -> (line, names it calls)
    expanded: dict[tuple[str, int], str] = {}  # macro use -> its expanded runs (Note [Functions a macro makes])
    defines: set[tuple[str, int]] = set()  # the #define lines those uses expand, for a use another quote keeps as written
    for path in sorted(p for p in store.files() if _MPS_FILE.search(p)):
        for first in sorted({a for a, _b in store.function_spans(path)}):
            span = bodies._span(path, first)
            if span is None:  # a native a macro makes: its expanded runs, quoted at the use's line
                made = [text for text in tree.macro_body(path, first) or () if _line_runs(text)]
                if made:
                    expanded[(path, first)] = " ".join(" ".join(t.split()) for t in made)
                    defines.update((path, k) for k in _define_lines(tree.line(path, first), tree._text(path)))
                continue
            if span[0] != first:
                continue
            spans[(path, first)] = (max(b for a, b in store.function_spans(path) if a == first), span[1])
            _scan(tree, (path, first), span[1], runs, calls)
    text_defined = _text_bodies(store, tree, spans, runs, calls)
    called: dict[str, list[tuple[tuple[str, int], tuple[str, int]]]] = {}  # name -> (definition, its body) in MPS files

    def leads(name: str, body: tuple[str, int]) -> bool:
        """Whether _Bodies, reading ``body``, reads a live body for a call of ``name``."""
        if name not in called:
            called[name] = [((f, n), (f, span[0])) for f, n in definitions(name)
                            if _MPS_FILE.search(f) and (span := bodies._span(f, n)) is not None]
            called[name] += [(b, b) for b in text_defined.get(name, ())]
        return any(to in live for at, to in called[name] if at != body)  # not its own definition (_read)

    live = set(runs)
    grew = True
    while grew:  # live: gives a run, or calls a live body
        grew = False
        for body, lines in calls.items():
            if body not in live and any(leads(name, body) for _n, names in lines for name in names):
                live.add(body)
                grew = True
    rows = _extra_rows(tree, live, spans, runs) | defines
    for body in live:  # the lines that give a run or lead to one, not the bodies' branches: Note [MPS branches on a tree]
        path = body[0]
        rows.update((path, n) for n in runs.get(body, ()))
        rows.update((path, n) for n, names in calls.get(body, ()) if any(leads(name, body) for name in names))
        _bound_rows(bodies, definitions, body, spans[body][1], [(n, name) for n, names in calls.get(body, ())
                                                               for name in names if leads(name, body)])
        for n in runs.get(body, ()):
            rows.update((path, k) for k in _continuation(tree, path, n))
            for _role, _name, expr in _line_runs(_code(tree.line(path, n)), _continued(tree, path, n)):
                defined = bodies.metal_definition(expr) if expr else None
                if defined is not None:
                    rows.add((defined[1], defined[2]))
                elif expr:  # Note [Kernel names a format builds]: the lines its name is built on
                    exprs, built = bodies.assigned(path, (body[1], spans[body][1]), n, expr)
                    rows.update((path, k) for k in built)
                    for e in exprs:  # and the helpers that return it: Note [A kernel name a helper returns]
                        bodies.helpers_put(path, e)
    rows |= bodies.helper_lines
    for file, k, text in tree.metal_lines():  # every Metal kernel's head and instantiation
        if file.endswith(".metal") and metalnames.head_name(_code(text), tree.line(file, k - 1)):
            rows.update({(file, k), (file, k - 1)} if not _KERNEL_VOID.search(text) else {(file, k)})
    for file in sorted({f for f, _k, _t in tree.metal_lines() if f.endswith(".metal")}):
        for k, text in tree.instances(file):  # Note [Metal kernels a macro instantiates]
            if kept := metalnames.compact(text):
                expanded[(file, k)] = kept
    ends = [(path, first, *spans[(path, first)]) for path, first in sorted(live)]
    ends += sorted(b for b in bodies.helper_spans if (b[0], b[1]) not in live)
    quoted = {(path, n): tree.line(path, n) for path, n in rows} | expanded
    return [(path, n, quoted[(path, n)]) for path, n in sorted(quoted)], ends


def _bound_rows(bodies: "_Bodies", definitions: Definitions, body: tuple[str, int], end: int,
                sites: list[tuple[int, str]]) -> None:
    """Bind, as _Bodies._read does, the parameters of the functions ``body`` calls at ``sites`` (line,
    name), so that the lines a caller's local is read from (Note [A kernel name a helper returns]) are
    in ``bodies.helper_lines`` for quoted_rows."""
    path, first = body
    for n, name in sites:
        for def_file, def_line in definitions(name):
            if _MPS_FILE.search(def_file):
                bodies._literals(path, n, name, def_file, def_line, None, (first, end))


def _scan(tree: TreeLines, body: tuple[str, int], end: int, runs: dict, calls: dict) -> None:
    """Note ``body``'s lines that give a run and the names each line calls (quoted_rows)."""
    path, first = body
    for n in range(first, end + 1):
        text = _code(tree.line(path, n))
        if _line_runs(text, _continued(tree, path, n)):
            runs.setdefault(body, []).append(n)
        if names := _called(text):
            calls.setdefault(body, []).append((n, names))


def _text_bodies(store, tree: TreeLines, spans: dict, runs: dict, calls: dict) -> dict[str, list[tuple[str, int]]]:
    """Note [Helpers the index does not define]: the column-0 definitions (and TORCH_IMPL_FUNCs) of
    the .mm files that the index lacks, scanned as bodies (keyed as _Bodies._text_span reads them:
    the first line and first + _SIGNATURE_LINES); name -> their bodies."""
    out: dict[str, list[tuple[str, int]]] = {}
    for path in sorted(p for p in store.files() if _MPS_FILE.search(p) and p.endswith(".mm")):
        lines = tree._text(path)
        firsts = {a for a, _b in store.function_spans(path)}
        for n, text in enumerate(lines, 1):
            m = _ANY_HEAD.match(text)
            end = _body_end(lines, n, n + _SIGNATURE_LINES) if m is not None and n not in firsts else None
            if end is None:
                continue
            spans[(path, n)] = (n + _SIGNATURE_LINES, end)
            out.setdefault(m.group(1) or m.group(2), []).append((path, n))
            _scan(tree, (path, n), end, runs, calls)
    return out


def _extra_rows(tree: TreeLines, live: set, spans: dict, runs: dict) -> set[tuple[str, int]]:
    """The lines quoted besides each live body's runs and calls: the first line of a body the index
    lacks, the header of a body with a Metal lookup (the parameters a call binds) and the headers'
    ``kernel void`` lines (Notes [Helpers the index does not define], [A kernel name the caller gives])."""
    rows = {body for body in live if body[1] + _SIGNATURE_LINES == spans[body][0]}
    for file, n, text in tree.metal_lines():
        if file.endswith((".h", ".mm")) and _KERNEL_VOID.search(text):
            rows.add((file, n))
    for path, first in live:
        looks_up = any(role == Role.LAUNCH and expr for n in runs.get((path, first), ())
                       for role, _name, expr in _line_runs(_code(tree.line(path, n)), _continued(tree, path, n)))
        for n in range(first, first + _SIGNATURE_LINES) if looks_up else ():
            rows.add((path, n))
            if "{" in _code(tree.line(path, n)):
                break
    return rows


__all__ = ["GRAPH_RUN", "METAL_DISPATCH", "METAL_LOOKUP", "MPS_KEY", "QuotedLines", "TreeLines", "definitions_of",
           "graph_runs", "lines_of", "quoted_rows"]
