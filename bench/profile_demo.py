"""Export a plain torch.profiler chrome trace of bench/trace_cuda_demo.py's workload, and the
kernel names it saw (one per line), for `atenmap kernel --from-trace` checks on a GPU machine.

    python bench/profile_demo.py OUT_DIR
"""
import pathlib
import sys

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import trace_cuda_demo as demo  # noqa: E402


def main() -> None:
    out = pathlib.Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    if not torch.cuda.is_available():
        sys.exit("profile_demo: no CUDA device")
    dev = "cuda"
    model = demo.MLP().to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(64, 256, device=dev)
    y = torch.randint(0, 10, (64,), device=dev)
    a = torch.randn(256, 256, device=dev)
    demo.train_step(model, opt, x, y)  # warm-up outside the profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(2):
            demo.train_step(model, opt, x, y)
            demo.by_hand(a, a)
            torch.sort(torch.randn(1000, device=dev))
            torch.randn(128, 128, device=dev).sum(dim=1)
            torch.exp(a)
        torch.cuda.synchronize()
    prof.export_chrome_trace(str(out / "profile.json"))
    names = sorted({e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA})
    (out / "kernel_names.txt").write_text("\n".join(names) + "\n")
    print(f"{len(names)} distinct GPU event names; torch {torch.__version__}, {torch.cuda.get_device_name()}")


if __name__ == "__main__":
    main()
