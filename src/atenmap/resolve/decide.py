"""Which branches one call can take: a run's conditions decided by what is known of the call.

Note [Deciding a branch]
~~~~~~~~~~~~~~~~~~~~~~~~
A run's ``when`` reasons (resolve/runs.py) are the source's own conditions: ``if (at::isComplexType(
common_dtype))``, ``else of if (iter.numel() == 0)``, ``case ScalarType::Half:`` under ``switch
(iter.dtype())``, ``after if (N == 0) return`` and the dtypes of the ``AT_DISPATCH`` around the call.
``decide(reason, facts)`` answers True (the call takes it), False (it cannot) or None (the facts
do not say: the branch stays, labelled). Three-valued logic throughout: ``!``, ``&&``, ``||`` and
parentheses are read; an atom nobody can decide is None, and ``None && False`` is False.

What decides an atom, and the PyTorch rule behind it:
- dtype tests on the tensors' dtype (``isComplexType(x)``, ``x.is_complex()``, ``isFloatingType``,
  ``is_floating_point()``, ``isIntegralType(x, includeBool)``, ``isReducedFloatingType``,
  ``x.scalar_type() == kHalf`` / ``ScalarType::Half`` / ``at::kHalf`` and ``!=``,
  ``std::is_same<scalar_t, at::Half>`` (``_v`` and ``::value``)): a kernel's ``common_dtype``, the
  ``scalar_type()`` of its inputs and ``scalar_t`` inside an ``AT_DISPATCH`` lambda are the call's
  dtype when every tensor has it (which ``--dtype`` states);
- ``numel() == 0`` / ``is_empty()`` / ``numel() > 0``: with shapes given, whether any given tensor
  is empty (a fresh result of non-empty inputs is not);
- ``dim() == N`` (``<``, ``>``, ``!=``, ...): with shapes given and all of one rank;
- ``is_contiguous()``: tensors made by the example's factories (and those ``--shape`` describes)
  are contiguous, except below a copy of a view that changes strides (Note [A copy of a view is
  strided] in strided.py), where the default call says false and a user's call does not decide.
Nothing else is decided for a user's call: a condition on sizes, strides, devices or settings stays
None -- except the device where the call is asked about one dispatch key (``facts.device``, as
Index.output_node sets it: Note [The node of a composite's output] in outputnode.py): a tensor that
reached the CPU key is on the CPU (``is_cuda()``, ``is_lazy()``, ``is_privateuseone()`` false) and,
a dense key's, no nested, sparse, quantized or mkldnn tensor (those dispatch to keys of their own).

The default call (no ``--dtype``/``--shape``/``--example``; it only ranks, never drops: Note [A call
with the defaults] in runs.py) says more, because a reader who describes nothing gets the common
case: its tensors are fresh (non-empty, contiguous in the default memory format, so
``suggest_memory_format()`` is ``Contiguous`` and ``is_contiguous(ChannelsLast)`` is false, all on
the dispatch key's device, so ``is_cuda()`` is true under CUDA and ``is_cpu()`` false, none of them autograd's
ZeroTensor (``_is_zerotensor()``), with more than one dimension of more than one element (so
``t.numel() == t.size(dim)``, a vector's case, is false, and so are ``t.dim() == 0``, a scalar's, and
``t.size(d) == 1``; a named value set once from one such call counts as the call: ``const auto
dim_tensor1 = tensor1.dim();`` then ``dim_tensor1 == 0``), all of the call's dtype, so ``a.dtype() == b.scalar_type()`` holds) and torch's global settings are at their
defaults (:data:`SETTING_DEFAULTS`: deterministic algorithms off, cuDNN on, cuDNN benchmark off,
...). An operator with a required ``ScalarType`` parameter (``to.dtype``, ``to.device``) converts:
it returns its input itself when nothing changes (``to``'s alias check), so the copy it makes is
between two dtypes, and two tensors' dtypes compare unequal (copy_'s ``memcpy_eligible`` is false:
a conversion runs a kernel, not a memcpy, and gpu_kernel's ``needs_dynamic_casting`` holds: the
unrolled kernel that casts, not the vectorized one).
"""
from __future__ import annotations

import re

from atenmap.model import Reason
from atenmap.resolve.callfacts import CallFacts
from atenmap.resolve.dtypes import TORCH_NAMES, cpp_scalar_type

_COMPLEX = {"ComplexHalf", "ComplexFloat", "ComplexDouble"}
_FLOATING = {"Half", "Float", "Double", "BFloat16", "Float8_e5m2", "Float8_e4m3fn", "Float8_e5m2fnuz",
             "Float8_e4m3fnuz"}
_INTEGRAL = {"Byte", "Char", "Short", "Int", "Long", "UInt16", "UInt32", "UInt64"}
_REDUCED = {"Half", "BFloat16"}
_TORCH_NAME_TO_SCALAR = {v: k for k, v in TORCH_NAMES.items()}

_COMMENT = re.compile(r"/\*.*?\*/")  # /*includeBool=*/true
_TOKEN = re.compile(r"\s*(&&|\|\||!=|!(?!=)|\(|\)|[^()!&|]+(?:!=[^()!&|]*)?|.)")


def decide(reason: Reason, facts: CallFacts, flags: dict[str, str] | None = None,
           bound: dict[str, str] | None = None) -> bool | None:
    """Whether the call ``facts`` describes takes the branch ``reason`` names (Note [Deciding a branch])."""
    kind, text = reason.kind, reason.text
    if kind == "dtypes":
        return _in_dtypes(text, facts)
    if kind == "if" and text.startswith("if "):
        return condition(text[3:], facts, flags, bound)
    if kind == "else" and text.startswith("else of if "):
        return _not(condition(text[len("else of if "):], facts, flags, bound))
    if kind == "check":  # ``after TORCH_CHECK(c)``: the code after a check runs only where it holds
        m = _CHECK.fullmatch(text)
        return condition(m.group(1), facts, flags, bound) if m else None
    if kind == "return" and text.startswith("after if (") and text.endswith(") return"):
        return _not(condition(text[len("after if "):-len(" return")], facts, flags, bound))
    if kind == "ternary":
        cond, _, side = text.partition(" ? ")
        got = condition(cond, facts, flags, bound)
        return got if side.startswith("here") else _not(got)
    return None


_CHECK = re.compile(r"after TORCH_CHECK\w*\((.*)\)", re.S)


# Note [What MPS code tests]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~
# ATen's MPS kernels (native/mps/operations/*.mm) pick their path with a few predicates of their own,
# defined in native/mps/OperationUtils.h and aten/src/ATen/mps/MPSDevice.h:
# - ``supportedFloatingType(t)``: ``kFloat``, ``kHalf`` or ``kBFloat16`` (MPS has no float64);
#   ``supportedFloatingOrComplexType(t)`` adds ``kComplexFloat`` and ``kComplexHalf`` (when
#   ``supportsComplex()``: macOS 14); a user's ``--dtype`` decides them as it decides isFloatingType;
# - ``is_macos_13_or_newer(MacOSVersion::MACOS_VER_14_0_PLUS)`` and ``supportsComplex()``: the
#   macOS the process runs on. The default call runs on a current macOS (15 or newer), where each
#   holds: the branch for an older macOS ranks after (Note [A call with the defaults] in runs.py);
#   a user's call leaves them open (the macOS is not an argument);
# - ``std::getenv("PYTORCH_MPS_PREFER_METAL") != nullptr``: an environment variable, unset in the
#   default call (as torch's settings are at their defaults), open for a user's.
_MPS_FLOATING = {"Float", "Half", "BFloat16"}
_MPS_PREDICATES = (("supportedFloatingOrComplexType(", _MPS_FLOATING | {"ComplexFloat", "ComplexHalf"}),
                   ("supportedFloatingType(", _MPS_FLOATING))
_MACOS = re.compile(r"(?:(?:at::)?mps::)?(?:is_macos_13_or_newer\((?:\w+::)*MACOS_VER_\w+\)|supportsComplex\(\))")
_GETENV = re.compile(r"(?:std::)?getenv\([^()]*\)(==|!=)(?:nullptr|NULL)")


# AT_DISPATCH_INDEX_TYPES (and a file's own ..._INDEX_TYPES macros, Loss.cu's
# AT_DISPATCH_NLL_LOSS_INDEX_TYPES) switch over an index tensor's dtype, not the data's.
_INDEX_DISPATCH = re.compile(r"\(.*INDEX_TYPES.*\)$")
# What the build or the machine decides, not the call: an ``#if`` is the build's (the chain describes
# one build, Note [Preprocessor conditions]), a runtime setting the user's (Note [Runtime backend choices]).
_NOT_THE_CALL = frozenset({"#if", "runtime"})


def decide_all(reasons, facts: CallFacts, context=None) -> bool | None:
    """All of ``reasons`` at once: False when one is False, True when all are True, else None.
    A ``case`` is decided with the ``switch`` that follows it. ``context``: ``reason -> (flags,
    bound)``, the ``bool NAME = EXPR`` of the function the reason sits in (Note [Flags a condition
    names] in runs.py) and the arguments its caller binds (Note [Arguments a caller binds])."""
    reasons = [r for r in reasons if r.kind not in _NOT_THE_CALL]
    typed = [r for r in reasons if r.kind == "dtypes" and not _INDEX_DISPATCH.search(r.text)]
    reasons = [r for r in reasons if r.kind != "dtypes"]
    out: bool | None = True
    if typed:  # nested dispatches switch over different tensors: the call's dtype needs one of them
        got = [decide(r, facts) for r in typed]
        out = True if True in got else (None if None in got else False)
        if out is False:
            return False
    for i, r in enumerate(reasons):
        if r.kind == "case":
            switch = next((s for s in reasons[i + 1:] if s.kind == "switch"), None)
            got = _case(r.text, switch.text if switch else "", facts)
            if got is None and facts.default and switch is not None:
                flags, bound = context(switch) if context is not None else ({}, {})
                got = _format_case(r.text, switch.text, _Ctx(facts, flags, bound, 0))
        else:
            flags, bound = context(r) if context is not None else ({}, {})
            got = decide(r, facts, flags, bound)
        out = _and(out, got)
        if out is False:
            return False
    return out


def condition(text: str, facts: CallFacts, flags: dict[str, str] | None = None, bound: dict[str, str] | None = None,
              depth: int = 0) -> bool | None:
    """A C++ condition's truth for the call; None where the facts do not say. A flag of ``flags``
    stands for its expression (at most ``MAX_FLAG_DEPTH`` flags deep)."""
    if text.endswith("…") or depth > MAX_FLAG_DEPTH:  # a condition cut short is not read
        return None
    text = _COMMENT.sub(" ", text.strip())
    tokens = [t.strip() for t in _TOKEN.findall(text) if t.strip()]
    try:
        value, rest = _or(tokens, _Ctx(facts, flags or {}, bound or {}, depth))
    except (IndexError, RecursionError):
        return None
    return value if not rest else None


MAX_FLAG_DEPTH = 4


class _Ctx:
    __slots__ = ("facts", "flags", "bound", "depth", "dtype", "shapes")

    def __init__(self, facts: CallFacts, flags: dict[str, str], bound: dict[str, str], depth: int):
        self.facts, self.flags, self.bound, self.depth = facts, flags, bound, depth
        self.dtype, self.shapes = facts.dtype, facts.shapes


def _or(tokens, facts):
    left, tokens = _andexpr(tokens, facts)
    while tokens and tokens[0] == "||":
        right, tokens = _andexpr(tokens[1:], facts)
        left = True if left is True or right is True else (False if left is False and right is False else None)
    return left, tokens


def _andexpr(tokens, facts):
    left, tokens = _unary(tokens, facts)
    while tokens and tokens[0] == "&&":
        right, tokens = _unary(tokens[1:], facts)
        left = _and(left, right)
    return left, tokens


def _unary(tokens, facts):
    if tokens[0] == "!":
        value, rest = _unary(tokens[1:], facts)
        return _not(value), rest
    if tokens[0] == "(":
        # a parenthesised group, or the argument list of a call atom: ``isComplexType(dtype)``
        value, rest = _or(tokens[1:], facts)
        if rest and rest[0] == ")":
            return value, rest[1:]
        raise IndexError
    # an atom: the text up to the next && / || / unbalanced ), calls' parentheses included
    depth, i = 0, 0
    while i < len(tokens):
        t = tokens[i]
        if t == "(":
            depth += 1
        elif t == ")":
            if depth == 0:
                break
            depth -= 1
        elif depth == 0 and t in ("&&", "||"):
            break
        i += 1
    atom = "".join(tokens[:i])
    return _atom(atom, facts), tokens[i:]


def _and(a, b):
    if a is False or b is False:
        return False
    return True if a is True and b is True else None


def _not(a):
    return None if a is None else not a


_IS_SAME = re.compile(r"is_same(?:_v)?<\s*scalar_t\s*,\s*(?:(?:at|c10|std)::)?([\w:<> ]+?)\s*>")
_DTYPE_CMP = re.compile(r"(dtype|scalar_type|type)\w*\(?\)?\s*(==|!=)\s*(?:(?:at|c10)::)?(?:ScalarType::|k)(\w+)")
_CMP_DTYPE = re.compile(r"(?:(?:at|c10)::)?(?:ScalarType::|k)(\w+)\s*(==|!=)\s*[\w.:>-]*(dtype|scalar_type|type)")
_BOOL_EQ = re.compile(r"([^=!<>]+\(\))(==|!=)([^=!<>]+\(\))")  # two boolean calls compared
_DIM = re.compile(r"\bdim\(\)\s*(==|!=|<=|>=|<|>)\s*(\d+)\Z")
_FLAG_CMP = re.compile(r"([A-Za-z_]\w*)(==|!=|<=|>=|<|>)(-?\d+)")  # a named value against a number
_SIMPLE = re.compile(r"[\w.:]+\([^()]*\)")  # a flag that is one call (``tensor1.dim()``), compared as written
_SIZE_ONE = re.compile(r"[\w.:]*\.(?:sym_)?size\([^()]*\)(==|!=)1")  # t.size(d) == 1 (spaces removed)
_NUMEL0 = re.compile(r"\bnumel\(\)\s*(==|!=|>|<=)\s*0\Z")


# torch's global settings at their defaults (torch.backends.*, torch.use_deterministic_algorithms),
# read by ATen as ``at::globalContext().NAME()``: the default call's only (Note [Deciding a branch]).
SETTING_DEFAULTS = {
    "deterministicAlgorithms": False, "deterministicAlgorithmsWarnOnly": False, "deterministicCuDNN": False,
    "deterministicFillUninitializedMemory": True, "userEnabledCuDNN": True, "userEnabledMkldnn": True,
    "benchmarkCuDNN": False, "allowTF32CuBLAS": False, "allowTF32CuDNN": True, "userEnabledNNPACK": True,
    "allowFP16ReductionCuBLAS": True, "allowBF16ReductionCuBLAS": True, "userEnabledFlashSDP": True,
    "userEnabledMemEfficientSDP": True, "userEnabledMathSDP": True, "userEnabledCuDNNSDP": True,
}
_SETTING = re.compile(r"(?:(?:at|c10)::)?globalContext\(\)\.(\w+)\(\)")
_MEMORY_FORMAT = re.compile(r"(?:(?:at|c10)::)?MemoryFormat::(\w+)")
_FORMAT_CMP = re.compile(r"([\w.:()]+?)(==|!=)(?:(?:at|c10)::)?MemoryFormat::(\w+)")
_SUGGEST = re.compile(r"[\w.:\[\]>-]*\.suggest_memory_format\(\)")
_CONTIG_IN = re.compile(r"[\w.:\[\]>-]*\.is_contiguous\((.+)\)")
_ON_DEVICE = re.compile(r"[\w.:\[\]()>-]*\.is_(cuda|cpu|mps|xpu|lazy|privateuseone|meta|hpu|ipu|vulkan)\(\)")
# a dense key's tensors (CPU, CUDA) are none of these: each has keys of its own (NestedTensorCPU, SparseCPU...)
_NOT_DENSE = re.compile(r"[\w.:\[\]()>-]*\.is_(nested|sparse|sparse_csr|quantized|mkldnn)\(\)")
_DENSE_KEYS = ("CPU", "CUDA", "MPS", "XPU")
_DTYPE_OF = r"[\w.:\[\]>-]*\.(?:dtype|scalar_type|common_dtype)\(\w*\)"
_DTYPES_EQ = re.compile(rf"({_DTYPE_OF})(==|!=){_DTYPE_OF}")
_ONE_ROW = re.compile(r"([\w.]+)\.numel\(\)(==|!=)\1\.size\(\w+\)")
_DYNAMIC_CASTING = re.compile(r"(?:[\w:]*::)?needs_dynamic_casting<[^<>]*>::check\(\w+\)")


def _memory_format(expr: str, facts: "_Ctx") -> str | None:
    """The memory format ``expr`` holds for the default call's fresh tensors: ``Contiguous`` for a
    ``suggest_memory_format()`` (or a variable set from one), a named ``MemoryFormat::X``; else None."""
    for _ in range(MAX_FLAG_DEPTH):
        expr = expr.replace(" ", "")
        if _SUGGEST.fullmatch(expr):
            return "Contiguous"
        m = _MEMORY_FORMAT.fullmatch(expr)
        if m:
            return m.group(1)
        if expr not in facts.flags:
            return None
        expr = facts.flags[expr]
    return None


def _default_call(a: str, facts: "_Ctx") -> bool | None:
    """An atom the default call decides (Note [Deciding a branch]): fresh tensors, default settings."""
    m = _SETTING.fullmatch(a)
    if m:
        return SETTING_DEFAULTS.get(m.group(1))
    if _MACOS.fullmatch(a):  # a current macOS (Note [What MPS code tests])
        return True
    m = _GETENV.fullmatch(a)
    if m:  # an environment variable the default call does not set
        return m.group(1) == "=="
    m = _FORMAT_CMP.fullmatch(a)
    if m:
        have = _memory_format(m.group(1), facts)
        return None if have is None else (have == m.group(3)) == (m.group(2) == "==")
    m = _CONTIG_IN.fullmatch(a)
    if m and facts.facts.strided:
        return None
    if m:
        want = _memory_format(m.group(1), facts)
        return None if want is None else want in ("Contiguous", "Preserve")
    if a.endswith(".is_contiguous()"):
        return not facts.facts.strided
    if a.endswith("._is_zerotensor()"):  # autograd's ZeroTensor is never a user's fresh tensor
        return False
    m = _ONE_ROW.fullmatch(a)
    if m:  # all of a tensor in one dim: a vector's special case (ScanUtils' scan_dim: a cub scan)
        return m.group(2) == "!="
    got = _on_key(a, facts)
    if got is not None:
        return got
    m = _DTYPES_EQ.fullmatch(a)
    if m:  # every tensor has the call's dtype, unless the operator converts
        return (not facts.facts.converts) == (m.group(2) == "==")
    if _DYNAMIC_CASTING.fullmatch(a):  # gpu_kernel casts when a tensor's dtype is not its lambda's
        return facts.facts.converts
    m = _NUMEL0.search(a)
    if m:
        return {"==": False, "<=": False, "!=": True, ">": True}[m.group(1)]
    if a.endswith(".is_empty()") or a == "is_empty()":
        return False
    m = _DIM.search(a)
    if m and m.group(2) == "0" and m.group(1) in ("==", "!=") \
            and re.fullmatch(r"[\w.:]*\.dim\(\)", a[:m.start() + 5]):
        # a fresh tensor is no 0-dim scalar (inner's ``self.dim() == 0``). Its rank is left open:
        # matmul's ``dim_tensor1 == 1`` is a dot, but diag's ``ndim == 1`` (a vector made a matrix) is
        # what diag is mostly called on
        return m.group(1) == "!="
    if m and m.group(2) == "0" and m.group(1) in (">", ">=") and re.fullmatch(r"[\w.:]*\.dim\(\)", a[:m.start() + 5]):
        return True
    m = _SIZE_ONE.fullmatch(a)
    if m:  # ... of more than one element in each (tensordot's ``if (s2 == 1)`` reads sizes, not this)
        return m.group(1) == "!="
    return None


def _on_key(a: str, facts: "_Ctx") -> bool | None:
    """A tensor's device or kind, known from the dispatch key its call reached (``facts.device``: the
    default call's, or the key a call is asked about, Note [The node of a composite's output])."""
    m = _ON_DEVICE.fullmatch(a)
    if m and facts.facts.device:  # is_privateuseone() is the PrivateUse1 key's; the others are the key's name
        asked = facts.facts.device.lower().replace("privateuse1", "privateuseone")
        return m.group(1) == asked
    if _NOT_DENSE.fullmatch(a) and facts.facts.device in _DENSE_KEYS:
        return False
    return None


def _atom(atom: str, facts: "_Ctx") -> bool | None:
    a = atom.replace(" ", "")
    if a in ("true", "false"):
        return a == "true"
    if a in facts.flags:
        return condition(facts.flags[a], facts.facts, facts.flags, facts.bound, facts.depth + 1)
    m = _FLAG_CMP.fullmatch(a)
    if m and m.group(1) in facts.flags and facts.depth < 4:  # ``dim_tensor1 == 1``, ``dim_tensor1`` a flag
        flag = facts.flags[m.group(1)].strip()
        if _SIMPLE.fullmatch(flag.replace(" ", "")):
            return condition(f"{flag} {m.group(2)} {m.group(3)}", facts.facts, facts.flags, facts.bound,
                             facts.depth + 1)
    if facts.bound:
        got = _bound(a, facts.bound)
        if got is not None:
            return got
    if facts.facts.default:
        got = _default_call(a, facts)
        if got is not None:
            return got
    elif facts.facts.device:
        got = _on_key(a, facts)
        if got is not None:
            return got
    dtype = facts.dtype
    if dtype is not None:
        for names, group in (("isComplexType(", _COMPLEX), (".is_complex()", _COMPLEX),
                             ("isFloatingType(", _FLOATING), (".is_floating_point()", _FLOATING),
                             ("isReducedFloatingType(", _REDUCED), *_MPS_PREDICATES):
            if names in a and _whole_call(a):
                return dtype in group
        if re.fullmatch(r"[\w.:()\[\]]*\.is_(?:conj|neg)\(\)", a) and dtype not in _COMPLEX:
            return False  # the conjugate and negative bits are set by conj()/neg views of complex tensors
        sides = _BOOL_EQ.fullmatch(a)
        if sides:
            left, right = _atom(sides.group(1), facts), _atom(sides.group(3), facts)
            if left is not None and right is not None:
                return (left == right) == (sides.group(2) == "==")
        if "isIntegralType(" in a and _whole_call(a):
            return dtype in _INTEGRAL or dtype == "Bool" and ("true" in a.split(",", 1)[-1])
        m = _IS_SAME.search(atom)
        if m and _whole_is_same(atom):
            want = cpp_scalar_type(m.group(1))
            return None if want is None else want == dtype
        m = _DTYPE_CMP.search(a) or _CMP_DTYPE.search(a)
        if m and _dtype_compare_is_whole(a):
            op, name = (m.group(2), m.group(3)) if m.re is _DTYPE_CMP else (m.group(2), m.group(1))
            if name in TORCH_NAMES:
                return (name == dtype) == (op == "==")
    if facts.shapes is not None:
        m = _NUMEL0.search(a)
        if m:
            empty = any(0 in s for s in facts.shapes)
            if not empty:
                return {"==": False, "<=": False, "!=": True, ">": True}[m.group(1)]
            return None
        if a.endswith(".is_empty()") or a == "is_empty()":
            return False if not any(0 in s for s in facts.shapes) else None
        m = _DIM.search(a)
        if m and facts.shapes and len({len(s) for s in facts.shapes}) == 1:
            d, n = len(facts.shapes[0]), int(m.group(2))
            return {"==": d == n, "!=": d != n, "<": d < n, ">": d > n, "<=": d <= n, ">=": d >= n}[m.group(1)]
        if a.endswith(".is_contiguous()"):
            return None if facts.facts.strided else True
    return None


_ADDRESSES = re.compile(r"&(\w+)(==|!=)&(\w+)")
_IS_SAME_CALL = re.compile(r"(\w+)\.is_same\((\w+)\)")
_CONSTANT = re.compile(r"(\w+)(?:\.to\w*(?:<\w+>)?\(\))?(==|!=|<=|>=|<|>)(-?\d+(?:\.\d*)?(?:e-?\d+)?)[fF]?")
_OPTIONAL = re.compile(r"(\w+)\.(?:has_value|defined)\(\)")
_NUMBER = re.compile(r"-?\d+(?:\.\d*)?(?:e-?\d+)?[fF]?")
_STRING_EQ = re.compile(r'(\w+)(==|!=)("[\w.:+-]*")')  # op_name == "add" (spaces gone: _atom)
_NO_VALUE = {"None", "std::nullopt", "c10::nullopt", "nullopt", "{}"}  # an optional without a value


# at::Reduction's enumerators (ATen/core/Reduction.h: None = 0, Mean = 1, Sum = 2), compared with a
# bound ``int reduction`` (its schema default Mean is 1: runs.py schema_defaults)
_REDUCTION_ENUM = re.compile(r"(?:(?:at|torch)::)?Reduction::(None|Mean|Sum)\b")
_REDUCTION_VALUES = {"None": "0", "Mean": "1", "Sum": "2"}


def _bound(a: str, bound: dict[str, str]) -> bool | None:
    """An atom on parameters the caller binds (Note [Arguments a caller binds] in runs.py)."""
    if "Reduction::" in a:
        a = _REDUCTION_ENUM.sub(lambda m: _REDUCTION_VALUES[m.group(1)], a)
    m = _ADDRESSES.fullmatch(a) or _IS_SAME_CALL.fullmatch(a)
    if m:
        left, right = m.group(1), m.group(3) if m.re is _ADDRESSES else m.group(2)
        if (left in bound or right in bound) and bound.get(left, left) == bound.get(right, right):
            return (m.re is _IS_SAME_CALL) or m.group(2) == "=="
        return None
    m = _CONSTANT.fullmatch(a)
    if m and _NUMBER.fullmatch(bound.get(m.group(1), "")):
        value, limit = float(bound[m.group(1)].rstrip("fF")), float(m.group(3))
        return {"==": value == limit, "!=": value != limit, "<": value < limit, ">": value > limit,
                "<=": value <= limit, ">=": value >= limit}[m.group(2)]
    if bound.get(a) in ("true", "false"):
        return bound[a] == "true"
    m = _STRING_EQ.fullmatch(a)
    if m and bound.get(m.group(1), "").startswith('"'):  # a string literal the caller passes (MPS: op_name)
        return (bound[m.group(1)] == m.group(3)) == (m.group(2) == "==")
    m = _OPTIONAL.fullmatch(a)
    if m and bound.get(m.group(1)) in _NO_VALUE:
        return False  # an optional argument left at None, or passed std::nullopt by its caller
    return None


def _whole_call(a: str) -> bool:
    """The atom is one call (``at::isComplexType(x)``), not a comparison with it."""
    return not re.search(r"[=<>]", a)


def _whole_is_same(atom: str) -> bool:
    return not re.search(r"[=<]=|!=", atom)


def _dtype_compare_is_whole(a: str) -> bool:
    return a.count("==") + a.count("!=") == 1


def _in_dtypes(text: str, facts: CallFacts) -> bool | None:
    """``float, double, half (AT_DISPATCH_FLOATING_TYPES_AND_HALF)``: whether the call's dtype is listed."""
    if facts.dtype is None:
        return None
    names = text.rsplit(" (", 1)[0].split(", ")
    scalars = {_TORCH_NAME_TO_SCALAR.get(n.strip()) for n in names}
    if None in scalars:  # a type argument that is no ScalarType (a variable): the list is not whole
        return True if facts.dtype in scalars else None
    return facts.dtype in scalars


def _format_case(label: str, switch: str, facts: "_Ctx") -> bool | None:
    """``case MemoryFormat::ChannelsLast:`` under ``switch (memory_format)``, for the default call."""
    m = re.fullmatch(r"case\s+(?:(?:at|c10)::)?MemoryFormat::(\w+)\s*:", label.strip())
    subject = re.fullmatch(r"switch\s*\((.*)\)", switch.strip(), re.S)
    if m is None or subject is None:
        return None
    have = _memory_format(subject.group(1), facts)
    return None if have is None else have == m.group(1)


def _case(label: str, switch: str, facts: CallFacts) -> bool | None:
    """``case ScalarType::Half:`` under ``switch (iter.dtype())``."""
    if facts.dtype is None or not re.search(r"dtype|scalar_type|ScalarType", switch):
        return None
    m = re.fullmatch(r"case\s+(?:(?:at|c10)::)?(?:ScalarType::|k)(\w+)\s*:", label.strip())
    if m is None or m.group(1) not in TORCH_NAMES:
        return None
    return m.group(1) == facts.dtype


__all__ = ["condition", "decide", "decide_all"]
