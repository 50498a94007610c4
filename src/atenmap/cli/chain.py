"""`atenmap chain OP` (and the `atenmap OP` shorthand)."""
from __future__ import annotations

from typing import List, Optional

import typer

from atenmap.cli.common import (CodegenOpt, JsonOpt, LinkOpt, NoCodegenOpt, SourceOpt, app, check_keys, linker, lookup_note,
                                open_index, status_line)
from atenmap.cli.complete import complete_key_arg, complete_operator_arg
from atenmap.cli.output import WideOpt, output_format, terminal, warn


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
) -> None:
    """The dispatch chain of OP, file:line for every step. Example: atenmap mul.out --key CUDA"""
    from atenmap.views import text as render

    fmt = output_format(fmt, as_json)
    chain, more_keys, bwd = _load(source, op, key, no_codegen, depth, codegen, expand=not no_expand, why=why,
                                  backward=backward)
    loc = linker(chain, link)
    for w in chain.warnings + (bwd.warnings if bwd else ()):
        warn(w)
    if fmt == "json" and bwd is not None:
        import json

        from atenmap.views.backward import backward_dict

        d = json.loads(render.chain_json(chain, link=loc))
        d["backward"] = backward_dict(bwd, link=loc)
        typer.echo(json.dumps(d, indent=2))
    elif fmt == "json":
        typer.echo(render.chain_json(chain, link=loc))
    elif fmt == "lines":
        from atenmap.views.editor import render_lines

        typer.echo("\n".join(render_lines(chain, absolute=getattr(loc, "mode", None) == "local")))
    else:
        # The bundled index prints path:line linking to the permalink (--link github prints the URL).
        shown, urls = loc, None
        if link is None and getattr(loc, "mode", None) == "github":
            shown, urls = None, loc
        term = terminal(wide)
        if urls is None and term.links and chain.source.origin != "bundled":
            from atenmap.views.links import linker as make_linker

            urls = make_linker(chain, "local")
        typer.echo("\n".join(render.chain_lines(chain, link=shown, more_keys=more_keys, term=term,
                                                urls=urls)))
        if bwd is not None:
            from atenmap.views.backward import backward_lines

            typer.echo("\n".join(backward_lines(bwd, link=shown, term=term, urls=urls)))


def _load(source, op: str, key, no_codegen: bool, depth: int, codegen: Optional[str] = None, expand: bool = True,
          why: bool = False, backward: bool = False):
    """The chain for ``--key`` (``all``: every key; none: devices.common_keys), the keys left out,
    and with ``backward`` the op's Backward for the chain's device keys (CPU and CUDA if none)."""
    from atenmap import devices
    from atenmap.errors import AtenmapError

    with open_index(source, no_codegen, codegen) as ix:
        found = ix.lookup(op)
        if found.picked:
            status_line(lookup_note(found))
        more: list[str] = []
        if key and any(k.lower() == "all" for k in key):
            keys = None
        elif key:
            check_keys(ix, key)
            keys = key
        else:
            every = ix.operator_keys(found.operator)
            keys = devices.common_keys(every) or None
            more = [k for k in every if k not in (keys or ())]
        chain = ix.chain(found.operator, keys=keys, depth=depth, expand=expand, why=why)
        bwd = None
        if backward:
            device_keys = [k.key for k in chain.keys if devices.key_device(k.key) not in ("any",)]
            bwd = ix.backward(found.operator, keys=device_keys or None, expand=expand, depth=depth)
    if key and keys and not chain.keys:
        raise AtenmapError("; ".join(chain.warnings))
    return chain, more, bwd
