"""Kernel launches ``kernel<<<config>>>(args)`` (queries/launches.scm, CUDA grammar only)."""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

from atenmap.extract import macros
from atenmap.extract.nodes import collapse_spaces, last_component, node_text, strip_templates
from atenmap.extract.unit import Scopes, Unit
from atenmap.kinds import FactKind

if TYPE_CHECKING:
    from atenmap.extract.treesitter import Node


# Note [Launches through a variable]
# ``impl_fptr<<<grid, block, 0, stream>>>(...)`` in cuda/DistanceKernel.cu launches whichever
# ``cdist_kernel_cuda_impl<scalar_t, dists<scalar_t>::two>`` was assigned to the local ``impl_fptr``;
# flash_attn's ``auto kernel = &flash_fwd_kernel<Kernel_traits, ...>; kernel<<<...>>>(params)`` does
# the same. A launch of a name the function assigns (``name = [&]kernel<...>`` or ``name = kernel;``,
# read as text before the launch) is a launch of each distinct function assigned: one fact per
# kernel, ``name`` the kernel, ``arg`` the variable as written, ``targs`` the template arguments of
# every assignment of that kernel, each once (``scalar_t, dists<scalar_t>::p, dists<scalar_t>::zero``).
# Note: a cost choice: the assignments are read in the function's text only for a launch through a
# variable (a handful in ATen); a query would capture every assignment of every file.
_ASSIGNED = rb"(?<![\w.>])%s\s*=(?!=)\s*&?\s*((?:[A-Za-z_]\w*::)*[A-Za-z_]\w*)\s*([<;])"


def assigned_kernels(unit: Unit, span: tuple[int, int], name: str, limit: int) -> dict[str, str]:
    """kernel -> template arguments. See Note [Launches through a variable]."""
    if not name.isidentifier():
        return {}
    text = unit.text[span[0]:limit]
    if name.encode() not in text:
        return {}  # the common case, without making a pattern for this name
    out: dict[str, list[str]] = {}
    for m in re.finditer(_ASSIGNED % re.escape(name.encode()), text):
        target = m.group(1).decode()
        if target in ("nullptr", "NULL", name):
            continue
        args = out.setdefault(target, [])
        if m.group(2) == b"<":
            end = text.find(b";", m.end())
            inner = text[m.end():end].decode("utf-8", "replace").rsplit(">", 1)[0] if end > 0 else ""
            for a in macros.split_args(inner, angles=True):
                a = " ".join(a.split())
                if a and a not in args:
                    args.append(a)
    return {t: ", ".join(a) for t, a in out.items()}




def launch(unit: Unit, node: Node, caps: dict[str, Node], scope: int, scopes: Scopes) -> None:
    """``@reference.launch``: one fact per kernel launched (Note [Launches through a variable])."""
    qual = strip_templates(node_text(caps["name"]))
    line = unit.line_of(node)
    config = collapse_spaces(node_text(caps["config"]))
    targets = assigned_kernels(unit, scopes.span(scope), qual, node.start_byte) if scope >= 0 else {}
    for target, targs in (targets or {"": ""}).items():
        unit.facts.append(unit.fact(FactKind.LAUNCH, last_component(target or qual), target or qual, line,
                                    scope=scope, arg=qual if target else "", detail=config, targs=targs))
