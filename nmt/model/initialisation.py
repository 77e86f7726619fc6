"""How a freshly built model's weights start, decided by the type of the module that owns each
parameter, never by its name:

| module                        | weight                                              | bias |
|-------------------------------|-----------------------------------------------------|------|
| nn.Embedding                  | normal, std emb_dim ** -0.5; the padding row zero   |      |
| nn.Linear                     | Xavier uniform                                      | zero |
| GateLinear                    | Xavier uniform, each gate's block on its own        | zero |
| GateLinear, recurrent         | orthogonal, each gate's block on its own            | zero |
| nn.GRU, nn.LSTM               | weight_ih as GateLinear, weight_hh as recurrent     | zero |
| nn.LayerNorm                  | one                                                 | zero |

A gate's block is initialised alone because each gate is its own map: Xavier's fan-out is the
hidden size, not three or four times it, and an orthogonal recurrence keeps the norm of the
state it carries from step to step (Saxe et al. 2014). Embeddings of standard deviation
d ** -0.5 become unit-variance vectors under the Transformer's sqrt(d) scaling. A weight two
modules share (a tied output layer, shared embeddings) follows the module that holds it first,
the embedding. Parameters are visited in `named_parameters` order, so a model of the same
config and seed starts from the same weights.
"""

from __future__ import annotations

import torch
from torch import nn

from nmt.model.rnnsearch import GateLinear


@torch.no_grad()
def initialise(model: nn.Module) -> None:
    owners = _owners(model)
    for parameter in model.parameters():
        module, name = owners[id(parameter)]
        _initialise(module, name, parameter)


def _owners(model: nn.Module) -> dict[int, tuple[nn.Module, str]]:
    """Each parameter's first owning module and its name there."""
    owners: dict[int, tuple[nn.Module, str]] = {}
    for module in model.modules():
        for name, parameter in module.named_parameters(recurse=False):
            owners.setdefault(id(parameter), (module, name))
    return owners


def _initialise(module: nn.Module, name: str, parameter: nn.Parameter) -> None:
    if name.startswith("bias"):  # Linear's bias; GRU and LSTM's bias_ih_l0, bias_hh_l0, ...
        nn.init.zeros_(parameter)
    elif isinstance(module, nn.Embedding):
        nn.init.normal_(parameter, std=parameter.size(-1) ** -0.5)
        if module.padding_idx is not None:
            parameter[module.padding_idx].zero_()
    elif isinstance(module, GateLinear):
        _per_gate(parameter, module.gates, recurrent=module.recurrent)
    elif isinstance(module, (nn.GRU, nn.LSTM)):
        gates = 3 if isinstance(module, nn.GRU) else 4
        _per_gate(parameter, gates, recurrent=name.startswith("weight_hh"))
    elif isinstance(module, nn.Linear):
        nn.init.xavier_uniform_(parameter)
    elif isinstance(module, nn.LayerNorm):
        nn.init.ones_(parameter)
    else:
        raise TypeError(f"no initialisation rule for {type(module).__name__}.{name}")


def _per_gate(weight: torch.Tensor, gates: int, recurrent: bool) -> None:
    """weight [gates * H, in]: each gate's [H, in] block orthogonal or Xavier uniform."""
    for block in weight.chunk(gates):
        if recurrent:
            nn.init.orthogonal_(block)
        else:
            nn.init.xavier_uniform_(block)
