"""Which device a dispatch key, a source file and a registration macro belong to.

Note [Registration device]
~~~~~~~~~~~~~~~~~~~~~~~~~~
``REGISTER_DISPATCH`` means different things depending on how the file is compiled
(ATen/native/DispatchStub.h): under nvcc/hipcc (``.cu``) it becomes ``REGISTER_CUDA_DISPATCH``;
in Objective-C++ with MPS (``.mm``) ``REGISTER_MPS_DISPATCH``; in files compiled once per CPU
capability (``native/cpu/``, ``quantized/cpu/kernels/`` ...) ``REGISTER_ARCH_DISPATCH(...,
CPU_CAPABILITY, ...)``, i.e. CPU. The explicit forms (``REGISTER_CUDA_DISPATCH``,
``REGISTER_AVX512_DISPATCH``, ``ALSO_REGISTER_AVX512_DISPATCH``, ``REGISTER_NO_CPU_DISPATCH`` ...)
name their device themselves. So the device of a registration is read from its macro first and
from its file second.
"""
from __future__ import annotations

from functools import lru_cache

from atenmap.kinds import KeyGroup

# Dispatch key -> device family whose code serves it.
_KEY_DEVICE = {
    "CPU": "cpu", "SparseCPU": "cpu", "SparseCsrCPU": "cpu", "QuantizedCPU": "cpu", "MkldnnCPU": "cpu",
    "NestedTensorCPU": "cpu",
    "CUDA": "cuda", "SparseCUDA": "cuda", "SparseCsrCUDA": "cuda", "QuantizedCUDA": "cuda",
    "NestedTensorCUDA": "cuda",
    "MPS": "mps", "XPU": "xpu", "HIP": "hip", "Meta": "meta", "SparseMeta": "meta", "SparseCsrMeta": "meta",
    "QuantizedMeta": "meta", "NestedTensorMeta": "meta",
}

KEY_ORDER = ["CPU", "CUDA", "MPS", "XPU", "Meta", *KeyGroup.COMPOSITE_EXPLICIT, *KeyGroup.COMPOSITE_IMPLICIT]


def key_device(key: str) -> str:
    """'cpu', 'cuda', 'mps', 'xpu', 'meta', or 'any' (composite keys and others)."""
    return _KEY_DEVICE.get(key, "any")


def key_sort(key: str) -> tuple[int, str]:
    return (KEY_ORDER.index(key) if key in KEY_ORDER else len(KEY_ORDER), key)


@lru_cache(maxsize=8192)  # pure; a chain asks it ~30,000 times about a few hundred files
def file_device(path: str) -> str:
    """Device family of a source file: cpu, cuda, mps, xpu, hip, vulkan, metal, or 'common'."""
    p = "/" + path
    if p.endswith((".cu", ".cuh")) or "/cuda/" in p or "/cudnn/" in p or "/sparse/cuda" in p:
        return "cuda"
    if p.endswith(".mm") or "/mps/" in p:
        return "mps"
    if "/miopen/" in p or "/hip/" in p:
        return "hip"
    if "/vulkan/" in p:
        return "vulkan"
    if "/metal/" in p:
        return "metal"
    if "/xpu/" in p or "/mkldnn/xpu/" in p:
        return "xpu"
    if "/cpu/" in p or "/mkldnn/" in p:
        return "cpu"
    return "common"


@lru_cache(maxsize=8192)
def file_allowed(path: str, device: str) -> bool:
    """May code in ``path`` run for a chain of ``device``? Common code serves every device."""
    fd = file_device(path)
    if device == "any":
        return True
    if device == "meta":
        return fd == "common"
    return fd in (device, "common")


_MACRO_DEVICE = {
    "REGISTER_CUDA_DISPATCH": "cuda", "REGISTER_HIP_DISPATCH": "hip", "REGISTER_MPS_DISPATCH": "mps",
    "REGISTER_XPU_DISPATCH": "xpu", "REGISTER_MTIA_DISPATCH": "mtia", "REGISTER_PRIVATEUSE1_DISPATCH": "privateuse1",
}
# CPU forms -> the CPU capability they name ("" for every capability, or the one in the arguments).
_CPU_FORMS = {
    "REGISTER_ARCH_DISPATCH": "", "REGISTER_ALL_CPU_DISPATCH": "", "REGISTER_NO_CPU_DISPATCH": "",
    "REGISTER_AVX512_DISPATCH": "AVX512", "ALSO_REGISTER_AVX512_DISPATCH": "AVX512",
    "REGISTER_NO_AVX512_DISPATCH": "AVX512", "REGISTER_AVX2_DISPATCH": "AVX2", "REGISTER_VSX_DISPATCH": "VSX",
    "REGISTER_ZVECTOR_DISPATCH": "ZVECTOR", "REGISTER_SVE256_DISPATCH": "SVE256", "REGISTER_SVE_DISPATCH": "SVE",
}
# Forms that register "no kernel here": the stub raises for that device / capability.
_NO_KERNEL = {"REGISTER_NO_CPU_DISPATCH", "REGISTER_NO_AVX512_DISPATCH"}


def registration_device(macro: str, path: str) -> str:
    """See Note [Registration device]. Every REGISTER_*_DISPATCH form maps to a device; a form this
    table does not know (a newer PyTorch) is taken as a CPU form, like the ARCH family."""
    if macro in _MACRO_DEVICE:
        return _MACRO_DEVICE[macro]
    if macro != "REGISTER_DISPATCH":
        return "cpu"  # _CPU_FORMS, and unknown REGISTER_*_DISPATCH forms
    fd = file_device(path)
    if path.endswith((".cu", ".cuh")):
        return "cuda"
    if path.endswith(".mm"):
        return "mps"
    return fd if fd in ("cuda", "mps", "hip", "xpu") else "cpu"


# The keys most people ask about, and the composite keys that serve them when an operator has no
# kernel of their own (Note [Composite kernels serve every backend] in resolve/chain.py).
COMMON_KEYS = KeyGroup.COMMON
COMPOSITE_KEYS = KeyGroup.COMPOSITE


def common_keys(keys: list[str]) -> list[str]:
    """Of an operator's ``keys``, those a default view shows: CPU and CUDA, plus the composite key
    that serves whichever of them has no kernel of its own; every key when none of these is there."""
    shown = [k for k in keys if k in COMMON_KEYS]
    if len(shown) < len(COMMON_KEYS):
        shown += [k for k in keys if k in COMPOSITE_KEYS][:1]
    return [k for k in keys if k in shown] or list(keys)


def registration_capability(macro: str) -> str:
    """The CPU capability a CPU registration form names (``AVX512`` ...), else ''."""
    return _CPU_FORMS.get(macro, "")


def registration_has_kernel(macro: str) -> bool:
    """False for REGISTER_NO_CPU_DISPATCH / REGISTER_NO_AVX512_DISPATCH: no kernel for that device."""
    return macro not in _NO_KERNEL
