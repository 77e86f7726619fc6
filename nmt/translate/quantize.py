"""int8 models for faster translation on CPUs (`nmt translate --quantize int8`).

Dynamic quantisation: the weights of every Linear layer (and of the encoder's GRU or LSTM)
are stored as int8 once; each call quantises its input on the fly, multiplies in int8 and
returns float32. Embeddings, layer norms and attention arithmetic stay float32, so the model
keeps its interface: search, ensembles and alignments run unchanged.

Which implementation, measured on this project's 2-core CPU (torch 2.13, torchao 0.18), a
512 -> 2048 Linear layer, best of 5 runs, microseconds per call:

| input     | threads | fp32  | quantize_dynamic | torchao int8 dynamic | torchao int8 weights |
|-----------|---------|-------|------------------|----------------------|----------------------|
| 10 x 512  | 1       |   627 |               71 |                  798 |                  854 |
| 100 x 512 | 1       |  1621 |              439 |                 1402 |                 1999 |
| 10 x 512  | 2       |  7740 |             7780 |                31059 |                15543 |
| 100 x 512 | 2       | 15473 |             7603 |               140323 |                31047 |

quantize_dynamic is `torch.ao.quantization.quantize_dynamic` (one scale per weight tensor);
the torchao columns are `torchao.quantization.quantize_` with
`Int8DynamicActivationInt8WeightConfig()` and `Int8WeightOnlyConfig()`. The two-thread rows
ran beside another job using both cores, so only their ratios mean anything.

torchao's int8 paths are built for `torch.compile` and GPUs: in eager mode on this CPU they
are no faster than fp32, or slower. quantize_dynamic runs fbgemm's int8 kernels, 4-9x faster
than fp32 on one thread, so that is the path taken, even though torch 2.13 marks it
deprecated in favour of torchao (its warnings are silenced here). Should a torch release
drop it, `quantize` says so (a UserError) rather than fall back to torchao and translate no
faster than fp32. Linear weights get one scale per output row (per channel): in a second run
71 and 439 us against 66 and 426 per tensor, for a third of the error on a tiny model whose
rows differ in scale, as trained rows do.
"""

from __future__ import annotations

import warnings

import torch
from torch import nn

from nmt.errors import UserError

SCHEMES = ("int8",)  # what --quantize accepts


def quantize(model: nn.Module, scheme: str = "int8") -> nn.Module:
    """`model` (a Seq2Seq or an Ensemble, on the CPU) in eval mode with int8 Linear and
    recurrent layers; converted in place and returned. Inference only: the fused training
    loss reads the output layer's float weights."""
    if scheme not in SCHEMES:
        raise UserError(f"--quantize {scheme}: choose one of {', '.join(SCHEMES)}.")
    if any(parameter.device.type != "cpu" for parameter in model.parameters()):
        raise UserError("--quantize int8 runs on the CPU only; load the model on the CPU.")
    try:
        from torch.ao.quantization import (
            default_dynamic_qconfig,
            per_channel_dynamic_qconfig,
            quantize_dynamic,
        )
    except ImportError:
        raise UserError(
            f"--quantize int8 needs torch.ao.quantization.quantize_dynamic, which torch "
            f"{torch.__version__} no longer has; translate without --quantize."
        ) from None
    # one scale per output row of a Linear: as fast, and rows of a trained layer differ in size
    layers = {
        nn.Linear: per_channel_dynamic_qconfig,
        nn.GRU: default_dynamic_qconfig,
        nn.LSTM: default_dynamic_qconfig,
    }
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        warnings.filterwarnings("ignore", message=".*quantized tensor creation.*deprecated")
        warnings.filterwarnings("ignore", message=".*quantize_per_tensor.*deprecated")
        return quantize_dynamic(model.eval(), layers, dtype=torch.qint8, inplace=True)
