"""atenmap: from a PyTorch operator to the ATen source of the kernels it launches."""
__version__ = "0.1.0"


def __getattr__(name):  # keep `import atenmap` (and CLI start-up) cheap
    if name in ("Index", "open_index"):
        from atenmap import api

        return getattr(api, name)
    if name == "trace":  # `with atenmap.trace() as t: ...` (the module is callable)
        import importlib  # not `from atenmap import trace`: its fromlist check calls this again, forever

        return importlib.import_module("atenmap.trace")
    raise AttributeError(name)
