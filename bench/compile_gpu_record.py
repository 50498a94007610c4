"""Record small torch.compile'd models on a GPU: Inductor's output code, a profile of one run, and
the expected answers from PyTorch itself, for bench/compile_score.py to score atenmap against.

    python bench/compile_gpu_record.py OUT [--models mlp,attention,...]

For each model (MODELS): a fresh TORCHINDUCTOR_CACHE_DIR (OUT/<model>/cache), provenance tracking
on (``config.trace.provenance_tracking_level = 1``), one compiled warm-up run, then one profiled
run (CPU + CUDA activities) exported to OUT/<model>/trace.json.gz. While Inductor compiles,
``GraphLowering.compile_to_module`` is wrapped to keep, per output-code file: its post-grad graph's
nodes (name, target, ``meta["original_aten"]``, ``meta["stack_trace"]``) and Inductor's own
provenance (``debug._inductor_triton_kernel_to_post_grad_node_info`` and
``debug._inductor_kernel_stack_trace``, keyed ``kernel:handle``). The output-code files (those with
a ``call``) are copied to OUT/<model>/code/. expected.json holds it all; nothing atenmap computes.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import sys
import time
import traceback
from pathlib import Path


def _models(dev: str = "cuda"):
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(256, 512)
            self.fc2 = nn.Linear(512, 256)

        def forward(self, x):
            h = F.gelu(self.fc1(x))
            return self.fc2(h) + x

    class Attention(nn.Module):
        def __init__(self, d=128, heads=4):
            super().__init__()
            self.qkv = nn.Linear(d, 3 * d)
            self.proj = nn.Linear(d, d)
            self.norm = nn.LayerNorm(d)
            self.heads = heads

        def forward(self, x):
            b, t, d = x.shape
            q, k, v = self.qkv(self.norm(x)).chunk(3, dim=-1)
            q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return x + self.proj(y.transpose(1, 2).reshape(b, t, d))

    class ConvBN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(16, 32, 3, padding=1)
            self.bn = nn.BatchNorm2d(32)

        def forward(self, x):
            return torch.relu(self.bn(self.conv(x)))

    class Norms(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln = nn.LayerNorm(256)
            self.gn = nn.GroupNorm(4, 32)

        def forward(self, x, y):
            rms = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
            return self.ln(x) + rms, self.gn(y)

    class EmbedLoss(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(1000, 64)
            self.head = nn.Linear(64, 1000)

        def forward(self, ids, target):
            logits = self.head(self.emb(ids))
            return F.cross_entropy(logits.view(-1, 1000), target.view(-1))

    def reduction(x):
        return x.sum(dim=1), x.amax(dim=0), (x * x).mean()

    def softmax(x):
        return torch.softmax(x * 0.5, dim=-1)

    def pointwise(x, y):
        return torch.sin(x) * torch.cos(y) + torch.sigmoid(x - y)

    def bmm(a, b):
        return torch.bmm(a, b).relu()

    def cumsum_sort(x):
        return torch.cumsum(x, dim=1), torch.sort(x, dim=-1).values

    r = lambda *s: torch.randn(*s, device=dev)  # noqa: E731
    return {
        "mlp": (MLP().to(dev), lambda: (r(64, 256),), False),
        "attention": (Attention().to(dev), lambda: (r(4, 64, 128),), False),
        "convbn": (ConvBN().to(dev).eval(), lambda: (r(8, 16, 32, 32),), False),
        "norms": (Norms().to(dev), lambda: (r(32, 256), r(8, 32, 16, 16)), False),
        "embedloss": (EmbedLoss().to(dev), lambda: (torch.randint(0, 1000, (16, 32), device=dev),
                                                     torch.randint(0, 1000, (16, 32), device=dev)), False),
        "reduction": (reduction, lambda: (r(512, 256),), False),
        "softmax": (softmax, lambda: (r(128, 1000),), False),
        "pointwise": (pointwise, lambda: (r(1024, 512), r(1024, 512)), False),
        "bmm": (bmm, lambda: (r(8, 64, 32), r(8, 32, 48)), False),
        "cumsum_sort": (cumsum_sort, lambda: (r(64, 128),), False),
        "mlp_backward": (MLP().to(dev), lambda: (r(64, 256).requires_grad_(),), True),
        "attention_backward": (Attention().to(dev), lambda: (r(4, 64, 128).requires_grad_(),), True),
    }


class Recorder:
    """Wraps GraphLowering.compile_to_module to keep each output file's graph and provenance."""

    def __init__(self):
        import torch._inductor.debug as dbg
        from torch._inductor.graph import GraphLowering

        self.files: dict[str, dict] = {}
        orig = GraphLowering.compile_to_module
        rec = self

        def compile_to_module(self, *a, **kw):
            mod = orig(self, *a, **kw)
            try:
                rec.keep(self, mod, dbg)
            except Exception:  # a recording fault must not change the run; it is written down
                rec.files.setdefault("<errors>", {}).setdefault("errors", []).append(traceback.format_exc())
            return mod

        GraphLowering.compile_to_module = compile_to_module

    def keep(self, graph, mod, dbg) -> None:
        path = getattr(mod, "__file__", None) or ""
        nodes = []
        for n in graph.module.graph.nodes if hasattr(graph, "module") else graph.graph.nodes:
            oa = n.meta.get("original_aten")
            nodes.append({"name": n.name, "op": n.op, "target": str(n.target),
                          "original_aten": str(oa) if oa is not None else None,
                          "stack_trace": n.meta.get("stack_trace")})
        self.files[path] = {
            "nodes": nodes,
            "kernel_nodes": {k: list(v) for k, v in getattr(dbg, "_inductor_triton_kernel_to_post_grad_node_info", {}).items()},
            "kernel_stack_traces": {k: list(v) for k, v in getattr(dbg, "_inductor_kernel_stack_trace", {}).items()},
        }


def record_one(name: str, model, make_inputs, backward: bool, out: Path) -> dict:
    import torch

    torch._dynamo.reset()
    compiled = torch.compile(model)
    args = make_inputs()

    def step():
        y = compiled(*args)
        if backward:
            (y if isinstance(y, torch.Tensor) else y[0]).sum().backward()
        return y

    t0 = time.time()
    step()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    compile_s = time.time() - t0
    from torch.profiler import ProfilerActivity, profile

    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if torch.cuda.is_available() else [])
    with profile(activities=acts) as prof:
        step()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
    raw = out / f"{name}.trace.json"
    prof.export_chrome_trace(str(raw))
    with open(raw, "rb") as f, gzip.open(out / "trace.json.gz", "wb") as g:
        shutil.copyfileobj(f, g)
    raw.unlink()
    return {"compile_s": round(compile_s, 2)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--models", default="")
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args(argv)
    os.environ.setdefault("INDUCTOR_PROVENANCE", "1")
    import torch
    import torch._inductor.config as cfg

    if hasattr(cfg.trace, "provenance_tracking_level"):
        cfg.trace.provenance_tracking_level = 1
    models = _models(args.device)
    rec = Recorder()
    wanted = [m for m in args.models.split(",") if m] or list(models)
    summary = {"torch": torch.__version__, "models": {},
               "device": torch.cuda.get_device_name(0) if args.device == "cuda" else args.device}
    for name in wanted:
        out = args.out / name
        cache = out / "cache"
        cache.mkdir(parents=True, exist_ok=True)
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(cache)
        rec.files = {}
        model, make_inputs, backward = models[name]
        try:
            info = record_one(name, model, make_inputs, backward, out)
        except Exception:
            info = {"error": traceback.format_exc()[-3000:]}
        code = out / "code"
        code.mkdir(exist_ok=True)
        files = {}
        for path, data in rec.files.items():
            p = Path(path)
            if p.is_file():
                shutil.copy(p, code / p.name)
                files[p.name] = {"original": str(p), **data}
            else:
                files[path] = data
        (out / "expected.json").write_text(json.dumps({"model": name, "files": files, **info}, indent=1))
        shutil.rmtree(cache, ignore_errors=True)
        summary["models"][name] = info
        print(name, info, flush=True)
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
