"""Record an autograd oracle from PyTorch itself: for every OpInfo of ``op_db`` that supports
autograd on CPU, which autograd node (``grad_fn``'s class) its output gets.

    python bench/autograd_oracle.py --out fixtures/oracle/autograd_cpu_torch2.13.json \
        [--samples N] [--dtype float32] [--op-timeout 60]

``--common`` records issue 38's common calls instead (bench/autograd_common.py: each call run at its
shapes; torch alone is needed): fixtures/oracle/autograd_common_cpu_torch2.13.json.

Needs torch, numpy and expecttest (op_db imports it). For each OpInfo with ``supports_autograd``
whose CPU dtypes include ``--dtype``: the sample inputs (the first ``--samples`` if given) of
``op.sample_inputs('cpu', dtype, requires_grad=True)`` (seeded), each run through ``op(...)``; the
first Tensor of the output that has a ``grad_fn`` gives the recorded name (``MmBackward0``). A sample
that raises is counted apart, never recorded. The file keeps, per OpInfo, its ``name``, ``aten_name``
and ``variant_test_name`` and a count per node name: small, sorted, rebuilt byte for byte from the
same torch. torch's version is in the file; the bench that reads it reports skew (an op or node the
scored tree does not have) apart.
"""
from __future__ import annotations

import argparse
import json
import signal
import sys
from collections import Counter
from pathlib import Path


def _first_grad_fn(out) -> str | None:
    import torch

    if isinstance(out, torch.Tensor):
        return type(out.grad_fn).__name__ if out.grad_fn is not None else None
    if isinstance(out, (tuple, list)):
        for o in out:
            name = _first_grad_fn(o)
            if name is not None:
                return name
    return None


class _Timeout(Exception):
    pass


def _alarm(_sig, _frame):
    raise _Timeout()


def record(samples: int, dtype_name: str, op_timeout: int) -> dict:
    import torch
    from torch.testing._internal.common_methods_invocations import op_db

    dtype = getattr(torch, dtype_name)
    signal.signal(signal.SIGALRM, _alarm)
    ops, errors, skipped = {}, Counter(), 0
    for op in op_db:
        if not op.supports_autograd or dtype not in op.supported_dtypes("cpu"):
            skipped += 1
            continue
        key = op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")
        nodes: Counter = Counter()
        torch.manual_seed(0)
        signal.alarm(op_timeout)
        try:
            for i, s in enumerate(op.sample_inputs("cpu", dtype, requires_grad=True)):
                if i >= samples:
                    break
                try:
                    name = _first_grad_fn(op(s.input, *s.args, **s.kwargs))
                except _Timeout:
                    raise
                except Exception as e:  # the op's own failure on this sample: counted, not recorded
                    errors[type(e).__name__] += 1
                    continue
                if name is not None:
                    nodes[name] += 1
        except _Timeout:
            errors["timeout"] += 1
        except Exception as e:  # sample_inputs itself failed
            errors["sample_inputs:" + type(e).__name__] += 1
        finally:
            signal.alarm(0)
        if nodes:
            ops[key] = {"name": op.name, "aten_name": op.aten_name, "variant": op.variant_test_name,
                        "nodes": dict(sorted(nodes.items()))}
    return {"torch": torch.__version__, "device": "cpu", "dtype": dtype_name, "samples_per_op": samples if samples < 10**6 else "all",
            "counts": {"opinfos": len(ops), "samples": sum(sum(o["nodes"].values()) for o in ops.values()),
                       "skipped_opinfos": skipped, "errors": dict(sorted(errors.items()))},
            "ops": dict(sorted(ops.items()))}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--common", action="store_true",
                    help="record issue 38's common calls instead (bench/autograd_common.py), at their shapes")
    ap.add_argument("--samples", type=int, default=10**6, help="samples per OpInfo (default: all)")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--op-timeout", type=int, default=60)
    a = ap.parse_args(argv)
    if a.common:
        import torch

        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from autograd_common import record as record_common

        data = {"torch": torch.__version__, "device": "cpu", "dtype": "float32", "calls": record_common()}
        Path(a.out).write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
        print(f"{len(data['calls'])} calls", file=sys.stderr)
        return 0
    data = record(a.samples, a.dtype, a.op_timeout)
    Path(a.out).write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    c = data["counts"]
    print(f"{c['opinfos']} OpInfos, {c['samples']} samples with a grad_fn; errors {c['errors']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
