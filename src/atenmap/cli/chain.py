"""`atenmap chain OP` (and the `atenmap OP` shorthand, which quick.py also answers without typer)."""
from __future__ import annotations

from typing import List, Optional

import typer

from atenmap.cli.chain_run import show_chain
from atenmap.cli.common import CodegenOpt, JsonOpt, LinkOpt, NoCodegenOpt, SourceOpt, app
from atenmap.cli.complete import complete_key_arg, complete_operator_arg
from atenmap.cli.output import WideOpt


@app.command("chain")
def chain_cmd(
    op: str = typer.Argument(..., help="Operator as PyTorch users name it: add.out, aten::mul.Tensor, softmax, "
                                       "torch.softmax, F.relu, Tensor.add_, torch.ops.aten.add.Tensor.",
                             autocompletion=complete_operator_arg),
    key: Optional[List[str]] = typer.Option(None, "--key", "-k", autocompletion=complete_key_arg,
                                            help="Dispatch key(s) to show (CPU, CUDA, ..., or all). Default: CPU and "
                                                 "CUDA (or the composite key serving them), the other keys named in one line."),
    depth: int = typer.Option(8, "--depth", min=1, max=30, help="How many calls deep to follow from a kernel."),
    no_expand: bool = typer.Option(False, "--no-expand", help="Calls to other operators (relu -> aten::clamp_min) stay "
                                                              "leaves instead of showing that operator's chain."),
    source: Optional[str] = SourceOpt,
    no_codegen: bool = NoCodegenOpt,
    codegen: Optional[str] = CodegenOpt,
    as_json: bool = JsonOpt,
    fmt: str = typer.Option("text", "--format", "-f", help="text (tree), json, or lines (path:line:col: role symbol, for vim -q / grep tools)."),
    link: Optional[str] = LinkOpt,
    wide: bool = WideOpt,
    why: bool = typer.Option(False, "--why", help="Under each launch/library/call step: the conditions on the way "
                                                  "from its caller (if/else/switch/case/ternary, early returns, "
                                                  "#if) and the AT_DISPATCH dtypes; also in --json."),
    backward: bool = typer.Option(False, "--backward", help="Also the backward: the derivatives.yaml entry and "
                                  "formulas, the autograd node the checkout's codegen makes (MulBackward0), and the "
                                  "chains of the operators the formulas call."),
    tree: bool = typer.Option(False, "--tree", help="Text: only the tree of steps (no runs block)."),
    runs: bool = typer.Option(False, "--runs", help="Text: only what runs (every launch, jit kernel and library "
                                                    "call, main path first, with the condition that picks it)."),
    dtype: Optional[str] = typer.Option(None, "--dtype", help="Your call's dtype (float32, bfloat16, int64, ...): "
                                        "the runs it cannot take are left out (AT_DISPATCH cases, dtype tests)."),
    shape: Optional[str] = typer.Option(None, "--shape", help="Your tensors' sizes, e.g. 64x64,64x64 (() for 0-dim): "
                                        "decides numel() == 0, dim() and is_contiguous() branches."),
    example: Optional[str] = typer.Option(None, "--example", help="Your call as Python, read with ast and never run, "
                                          "e.g. 'torch.mm(torch.randn(64, 64), torch.randn(64, 64))': its dtype, "
                                          "shapes, out= and aliased arguments."),
    platform: str = typer.Option("cuda", "--platform", metavar="cuda|rocm",
                                 help="The build the CUDA key's chain describes: cuda (default), or rocm, which takes "
                                      "the USE_ROCM side of #if (and AT_ROCM_ENABLED()) and follows native/miopen "
                                      "and native/hip code (docs/devices.md)."),
    compile_: bool = typer.Option(False, "--compile", help="Also what torch.compile's Inductor does with the op: "
                                  "its decomposition (and whether Inductor's table holds it), lowering (templates, "
                                  "extern choices), fallback (with the ATen chain), fx passes; read from the tree's "
                                  "Python (docs/compile.md)."),
) -> None:
    """The dispatch chain of OP: what runs (launches, jit kernels, library calls, main path first), then
    the tree, file:line for every step. Example: atenmap mul.out --key CUDA; for one call: atenmap mm --key CUDA
    --dtype float32 --shape 64x64,64x64"""
    show_chain(op, key, depth, no_expand, source, no_codegen, codegen, as_json, fmt, link, wide, why=why,
               backward=backward, tree=tree, runs=runs, compile_=compile_, dtype=dtype, shape=shape, example=example,
               platform=platform)
