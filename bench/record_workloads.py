"""Record the GPU trace fixtures (fixtures/trace/h200_*): three small real workloads, each profiled
twice on a CUDA machine. Needs torch with CUDA; writes under OUT (argv[1]).

    python bench/record_workloads.py OUT

Workloads (2 steps each, after 3 warm-up steps):
  mlp   Linear-ReLU-Linear, cross-entropy, SGD step
  conv  Conv2d-BatchNorm-ReLU-MaxPool-Conv2d-AdaptiveAvgPool-Linear, Adam step
  attn  an attention block: LayerNorm, qkv Linear, scaled_dot_product_attention, out Linear, backward

Per workload:
  h200_<name>.json.gz             torch.profiler(activities=[CPU, CUDA], with_stack=True) as anyone
                                  records it (no record_shapes): what `kernel --from-trace` must answer
  h200_<name>.recording.json.gz   atenmap.trace's own recording of two more steps (plain data, no index)
  h200_<name>.chrome.json.gz      the chrome export of that same profiler session (with_stack and
                                  record_shapes): the same events, for comparing the two readers
"""
from __future__ import annotations

import gzip
import json
import os
import sys
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

from atenmap.trace.profrec import ProfRecorder


def mlp():
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 10)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(64, 256, device="cuda"), torch.randint(0, 10, (64,), device="cuda")

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    return step


def conv():
    model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(16, 32, 3, padding=1), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(32, 10)).cuda()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = torch.randn(8, 3, 32, 32, device="cuda"), torch.randint(0, 10, (8,), device="cuda")

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    return step


class Block(nn.Module):
    def __init__(self, d=128, heads=4):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)
        self.heads = heads

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm(x)).view(b, t, 3, self.heads, d // self.heads).unbind(2)
        a = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
        return x + self.out(a.transpose(1, 2).reshape(b, t, d))


def attn():
    block = Block().cuda().half()
    x = torch.randn(4, 64, 128, device="cuda", dtype=torch.half, requires_grad=True)

    def step():
        block(x).float().pow(2).mean().backward()
    return step


def record(name: str, step, out: str) -> dict:
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], with_stack=True) as prof:
        for _ in range(2):
            step()
        torch.cuda.synchronize()
    sizes = {}
    with tempfile.TemporaryDirectory() as d:
        plain = os.path.join(d, "plain.json")
        prof.export_chrome_trace(plain)
        sizes["plain"] = _gz(plain, os.path.join(out, f"h200_{name}.json.gz"))
        rec = ProfRecorder(cuda=True).start()
        for _ in range(2):
            step()
        torch.cuda.synchronize()
        recording = rec.stop()
        own = os.path.join(d, "own.json")
        rec.prof.export_chrome_trace(own)
        sizes["chrome"] = _gz(own, os.path.join(out, f"h200_{name}.chrome.json.gz"))
        with gzip.open(os.path.join(out, f"h200_{name}.recording.json.gz"), "wt") as f:
            json.dump(recording.to_dict(), f)
    sizes["calls"] = len(recording.calls)
    sizes["kernels"] = recording.kernel_count
    sizes["unattributed"] = len(recording.unattributed)
    return sizes


def main() -> int:
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    print("torch", torch.__version__, torch.version.git_version, torch.cuda.get_device_name())
    for name, make in (("mlp", mlp), ("conv", conv), ("attn", attn)):
        print(name, json.dumps(record(name, make(), out)), flush=True)
    return 0


def _gz(src: str, dst: str) -> int:
    with open(src, "rb") as f, gzip.open(dst, "wb", compresslevel=9) as g:
        g.write(f.read())
    return os.path.getsize(dst)


if __name__ == "__main__":
    raise SystemExit(main())
