"""Which grammar reads a file, by its path alone (no tree_sitter import: the freshness check and
the file walk use it on every query). parse.py re-exports both names."""
from __future__ import annotations

LANGUAGES = {".cpp": "cpp", ".cc": "cpp", ".h": "cpp", ".hpp": "cpp", ".cu": "cuda", ".cuh": "cuda"}


def language_of(path: str) -> str | None:
    """Grammar for a file path; ``.mm`` (Objective-C++) is read with the C++ grammar as a fallback.
    Headers in a ``cuda/`` folder hold device code (``__global__`` kernels, ``<<<>>>`` launches:
    native/cuda/DistributionTemplates.h) and get the CUDA grammar, a superset of C++."""
    suffix = path[path.rfind("."):] if "." in path else ""
    if suffix == ".mm":
        return "objcpp"
    lang = LANGUAGES.get(suffix)
    if lang == "cpp" and suffix in (".h", ".hpp") and "/cuda/" in "/" + path:
        return "cuda"
    return lang
