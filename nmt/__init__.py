"""nmt: neural machine translation with attention, as a Python library.

    import nmt

    outcome = nmt.train_run("configs/demo.yaml", overrides=["train.max_steps=300"])
    translator = nmt.Translator.load(outcome.run_dir / "best.pt")
    print(translator.translate("the small dog sees a bird.").text)
    print(nmt.evaluate_run(outcome.run_dir / "best.pt", beam=1).summary())

The names in `__all__` are the public API (docs/python.md); everything else is internal and
may move. Wrong input raises `nmt.UserError` with the message the command line prints.
Names load on first use, so `import nmt` (and `nmt --help`) does not import torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from nmt.errors import UserError

__version__ = "0.2.0"

__all__ = [
    "Translator",
    "Translation",
    "Candidate",
    "AttentionMap",
    "train_run",
    "evaluate_run",
    "load_config",
    "UserError",
    "__version__",
]

_LAZY = {  # public name -> the module that defines it
    "Translator": "nmt.translate.translator",
    "Translation": "nmt.translate.translator",
    "Candidate": "nmt.translate.translator",
    "AttentionMap": "nmt.translate.translator",
    "train_run": "nmt.train.experiment",
    "evaluate_run": "nmt.translate.evaluation",
    "load_config": "nmt.config",
}

if TYPE_CHECKING:
    from nmt.config import load_config
    from nmt.train.experiment import train_run
    from nmt.translate.evaluation import evaluate_run
    from nmt.translate.translator import AttentionMap, Candidate, Translation, Translator


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'nmt' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
