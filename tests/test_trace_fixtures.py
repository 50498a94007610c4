"""Traces recorded on an H200 (torch 2.11, bench/record_workloads.py): an MLP training step, a small
conv net step and an attention block (SDPA), two steps each. `kernel --from-trace`'s reader must tie
every kernel event to the op the trace records for it (External id), with the user's frames, and
give per kernel event what atenmap trace's own recorder gave in the same profiler session. No torch,
no index: the join with the real tree is in test_trace_fixtures_realtree.py."""
from __future__ import annotations

import gzip
import json
import os

import pytest

from atenmap.trace.events import Recording
from atenmap.trace.tracefile import read_recording

from .conftest import REPO

FIXTURES = REPO / "fixtures" / "trace"
WORKLOADS = ("mlp", "conv", "attn")
DEVICE_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


def raw_events(path):
    with gzip.open(path, "rt") as f:
        return json.load(f)["traceEvents"]


def trace_ops(path) -> list[tuple[str, str]]:
    """(device event name, the cpu_op its External id names), read straight from the JSON."""
    events = raw_events(path)
    op = {e["args"]["External id"]: e["name"] for e in events if e.get("cat") == "cpu_op"}
    return sorted((e["name"], op[e["args"]["External id"]]) for e in events if e.get("cat") in DEVICE_CATS)


def recorded_ops(rec: Recording) -> list[tuple[str, str]]:
    return sorted((k.name, c.op) for c in rec.calls for k in c.kernels)


@pytest.mark.parametrize("name", WORKLOADS)
def test_every_kernel_event_gets_the_op_the_trace_records(name):
    path = FIXTURES / f"h200_{name}.json.gz"
    rec = read_recording(path)
    expected = trace_ops(path)
    assert len(expected) >= 40 and rec.unattributed == []
    assert recorded_ops(rec) == expected  # the External id's op, for every kernel, memcpy and memset
    for c in rec.calls:
        assert c.kernels and c.key == "CUDA"
        # the user's frames: this workload's step (or the attention block's forward) innermost, at
        # the function's first line (a chrome trace records no calling line), marked so
        inner = c.stack[-1]
        assert inner.file == "record_workloads.py" and not inner.exact, c
        assert inner.function in ("step", "forward"), c
    notes = " ".join(rec.notes)
    assert "no input types" in notes and "first line" in notes and "no Python stacks" not in notes


@pytest.mark.parametrize("name", WORKLOADS)
def test_reading_the_file_gives_what_the_live_recorder_gave(name):
    """The recorder's own chrome export (same session) read back: per kernel event the same op,
    torch-level function, user frames (file, function), autograd node and parents."""
    with gzip.open(FIXTURES / f"h200_{name}.recording.json.gz", "rt") as f:
        live = Recording.from_dict(json.load(f))
    read = read_recording(FIXTURES / f"h200_{name}.chrome.json.gz")

    # the live recordings were made before Note [Names users know]: their wrappers' names, renamed
    optimizer = {"mlp": "torch.optim.SGD.step", "conv": "torch.optim.Adam.step"}.get(name)
    public = {"torch._jit_internal.fn": "torch.nn.functional.max_pool2d", "torch.optim.optimizer.wrapper": optimizer}

    def per_event(rec):
        return {(k.correlation, k.name, i): (c.op.split(".")[0], public.get(c.function, c.function), c.node,
                                             tuple(p.split(".")[0] for p in c.parents),  # the file's are bare
                                             tuple((os.path.basename(f.file), f.function) for f in c.stack))
                for c in rec.calls for i, k in enumerate(c.kernels)}

    a, b = per_event(live), per_event(read)
    # (the live recording kept the optimizer's range on the GPU track as device work, unattributed:
    # recorded before profrec skipped gpu_user_annotation events)
    assert len(a) == live.kernel_count - len(live.unattributed) and a == b
    # the live recorder has the calling lines; the file only the functions' first lines
    assert all(f.exact for c in live.calls for f in c.stack if f.function == "step")
    assert {c.function for c in live.calls} >= {"torch.Tensor.backward"}
    functions = {c.function for c in read.calls}
    assert "torch.optim.optimizer.wrapper" not in functions and "torch._jit_internal.fn" not in functions
    if name == "conv":
        assert {"torch.nn.functional.max_pool2d", "torch.optim.Adam.step"} <= functions
    if name == "attn":
        assert any(c.function == "torch.nn.functional.scaled_dot_product_attention" for c in live.calls)
