"""A small CUDA workload for `atenmap trace` on a GPU machine:

    atenmap trace --key CUDA --json $OUT/trace.json --chrome $OUT/chrome.json -- bench/trace_cuda_demo.py

A two-layer MLP, forward and backward with an SGD step, then add, mm and softmax by hand. Every line
that launches kernels is marked with what it should show in the trace. Exits 2 with one line where
no CUDA device is there.
"""
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F


class MLP(nn.Module):
    def __init__(self, d: int = 256, hidden: int = 512, out: int = 10):
        super().__init__()
        self.fc1 = nn.Linear(d, hidden)
        self.fc2 = nn.Linear(hidden, out)

    def forward(self, x):
        h = F.relu(self.fc1(x))       # addmm (cuBLAS gemm) + relu (elementwise kernel)
        return self.fc2(h)            # addmm


def train_step(model, opt, x, y):
    loss = F.cross_entropy(model(x), y)   # log_softmax + nll_loss kernels
    opt.zero_grad()
    loss.backward()                       # mm / sum / threshold_backward ... under autograd nodes
    opt.step()                            # foreach kernels of SGD
    return loss


def by_hand(a, b):
    c = torch.add(a, b)                   # vectorized_elementwise_kernel<..., CUDAFunctor_add<float>>
    d = torch.mm(c, b)                    # cuBLAS gemm
    return F.softmax(d, dim=-1)           # cunn_SoftMaxForward


def main() -> int:
    if not torch.cuda.is_available():
        print("trace_cuda_demo: no CUDA device: this demo needs one", file=sys.stderr)
        return 2
    torch.manual_seed(0)
    dev = torch.device("cuda")
    model = MLP().to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(64, 256, device=dev)
    y = torch.randint(0, 10, (64,), device=dev)
    for _ in range(3):
        train_step(model, opt, x, y)
    a = torch.randn(128, 128, device=dev)
    b = torch.randn(128, 128, device=dev)
    for _ in range(3):
        by_hand(a, b)
    torch.cuda.synchronize()
    return 0


if __name__ == "__main__":
    sys.exit(main())
