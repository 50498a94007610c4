"""A small compiled model run RUNS times (default 4) on CUDA, for bench/device_compile_counts.sh: under
`atenmap trace --summary` each of its Triton kernels must show RUNS launches on the user's line, and
none of Inductor's autotuning launches (issue 35)."""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(256, 1024)
        self.fc2 = nn.Linear(1024, 256)
        self.norm = nn.LayerNorm(256)

    def forward(self, x):
        return self.norm(self.fc2(F.gelu(self.fc1(x))) + x)


model = torch.compile(MLP().cuda(), mode=os.environ.get("COMPILE_MODE") or None)
x = torch.randn(128, 256, device="cuda")
for _ in range(int(os.environ.get("RUNS", "4"))):
    y = model(x)
torch.cuda.synchronize()
print(tuple(y.shape))
