"""Issue 38's common calls, one list for the recorder (bench/autograd_oracle.py --common) and the scorer
(bench/bench_autograd.py): the autograd node the output of each gets on CPU.

Each call is the text a user writes (``torch.matmul(a, b)``, read by atenmap as ``--example``, never
run) and the shapes of its tensor arguments in order (``--shape``). The recorder runs the call in real
torch with those shapes (float32, ``requires_grad``; a ``c`` of ``torch.where`` is a bool mask, a list
argument's tensors are its elements); the scorer asks atenmap twice: from the text alone (the default
call, whose tensors are matrices: Note [Deciding a branch]) and with the shapes (``--shape``).

``COMMON``: the 24 calls of issue 38 (22 decided from the text, matmul and linear by their ranks).
``SHAPED``: matmul and linear at the ranks that pick other returns (Note [A branch the ranks pick]).
"""
from __future__ import annotations

# (call, shapes of its tensor arguments in order, as --shape writes them)
COMMON: tuple[tuple[str, str], ...] = (
    ("torch.mm(a, b)", "3x4,4x5"), ("torch.add(x, y)", "3x4,3x4"), ("torch.mul(x, y)", "3x4,3x4"),
    ("torch.relu(x)", "3x4"), ("F.relu(x)", "3x4"), ("torch.sigmoid(x)", "3x4"), ("torch.tanh(x)", "3x4"),
    ("torch.exp(x)", "3x4"), ("torch.sum(x)", "3x4"), ("torch.mean(x)", "3x4"), ("torch.softmax(x, 1)", "3x4"),
    ("torch.cat([a, b])", "3x4,3x4"), ("x.t()", "3x4"), ("torch.sub(x, y)", "3x4,3x4"),
    ("torch.div(x, y)", "3x4,3x4"), ("torch.pow(x, 2)", "3x4"), ("torch.log(x)", "3x4"), ("F.gelu(x)", "3x4"),
    ("x.transpose(0, 1)", "3x4"), ("torch.where(c, x, y)", "3x4,3x4,3x4"), ("torch.norm(x)", "3x4"),
    ("F.dropout(x, 0.5, training=True)", "3x4"),
    ("torch.matmul(a, b)", "3x4,4x5"), ("F.linear(x, w, b)", "3x4,5x4,5"),
)

SHAPED: tuple[tuple[str, str], ...] = (
    ("torch.matmul(a, b)", "3,3"), ("torch.matmul(a, b)", "3x4,4"), ("torch.matmul(a, b)", "4,4x5"),
    ("torch.matmul(a, b)", "2x3x4,2x4x5"), ("torch.matmul(a, b)", "2x3x4,4x5"), ("torch.matmul(a, b)", "2x3x4,4"),
    ("torch.matmul(a, b)", "3x4,2x4x5"), ("torch.matmul(a, b)", "2x2x3x4,2x2x4x5"),
    ("F.linear(x, w, b)", "2x3x4,5x4,5"), ("F.linear(x, w, b)", "4,5x4,5"),
    ("F.linear(x, w)", "3x4,5x4"), ("F.linear(x, w)", "2x3x4,5x4"),
    # issue 38's helper call (should_fold) and batch sizes: broadcast batches, 1-D @ N-D, N-D @ 2-D
    ("torch.matmul(a, b)", "4,2x4x5"), ("torch.matmul(a, b)", "2x2x3x4,4x5"), ("torch.matmul(a, b)", "4x5,2x2x5x3"),
    ("torch.matmul(a, b)", "1x3x4,2x4x5"), ("torch.matmul(a, b)", "2x3x4,1x4x5"), ("torch.matmul(a, b)", "5x4,2x4x3"),
    ("torch.matmul(a, b)", "2x1x3x4,3x4x5"), ("F.linear(x, w)", "4,5x4"), ("F.linear(x, w, b)", "2x2x3x4,5x4,5"),
)


def record(calls=COMMON + SHAPED) -> dict[str, str]:
    """``"call | shapes"`` -> the class of the output's ``grad_fn``, run in this process's torch."""
    import torch
    import torch.nn.functional as F

    out = {}
    for call, shapes in calls:
        sizes = [tuple(int(x) for x in s.split("x")) for s in shapes.split(",")]
        names = _tensor_names(call)
        torch.manual_seed(0)
        env = {"torch": torch, "F": F}
        for name, size in zip(names, sizes):
            env[name] = torch.randn(size) > 0 if name == "c" else torch.randn(size, requires_grad=True)
        out[f"{call} | {shapes}"] = type(eval(call, env).grad_fn).__name__  # noqa: S307 (our own list)
    return out


def _tensor_names(call: str) -> list[str]:
    """The one-letter tensor names of a call of the list, in order (``torch.where(c, x, y)``: c, x, y)."""
    import ast

    tree = ast.parse(call, mode="eval")
    return [n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and len(n.id) == 1 and n.id != "F"]
