"""nmt: neural machine translation with attention, as a Python library.

    import nmt

    outcome = nmt.train_run("configs/demo.yaml", overrides=["train.max_steps=300"])
    translator = nmt.Translator.load(outcome.run_dir)  # a run directory: its best.pt
    print(translator.translate("the small dog sees a bird.").text)
    print(nmt.evaluate_run(outcome.run_dir / "best.pt", beam=1).summary())

The names in `__all__` are the public API (docs/python.md); everything else is internal and
may move. Wrong input raises `nmt.UserError` with the message the command line prints.
Names load on first use, so `import nmt` (and `nmt --help`) does not import torch.
"""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any

from nmt.errors import UserError
from nmt.version import __version__

# torch runs bf16 matrix products on a CPU through oneDNN, and keeps their primitives per
# input shape in two caches, each holding megabytes per shape: ideep's (LRU_CACHE_CAPACITY,
# 1024 by default) and oneDNN's own (ONEDNN_PRIMITIVE_CACHE_CAPACITY, 1024). Training's
# batches come in hundreds of shapes, so a bf16 run grew by gigabytes; small caches bound
# it at no cost in speed (measured, docs/results.md). Read when oneDNN first runs, so set
# before torch computes anything.
os.environ.setdefault("LRU_CACHE_CAPACITY", "16")
os.environ.setdefault("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "64")
# torch's threads (GNU OpenMP) spin 300,000 times waiting for work before they sleep. Alone
# on its cores a process loses nothing if they spin 1,000 times instead; beside another
# process, spinning threads take the cores the other's threads wait for: two trainings on 2
# cores each ran at 21-23% of one alone, and at 51-57% with 1,000 (docs/results.md, "Two
# jobs on one machine"). Read when torch loads, so set before it is imported.
os.environ.setdefault("GOMP_SPINCOUNT", "1000")

__all__ = [
    "Translator",
    "Translation",
    "Candidate",
    "AttentionMap",
    "PairScore",
    "Hypothesis",
    "train_run",
    "Outcome",
    "evaluate_run",
    "Scores",
    "SystemRow",
    "Comparison",
    "ByDirection",
    "load_config",
    "Experiment",
    "UserError",
    "__version__",
]

_LAZY = {  # public name -> the module that defines it
    "Translator": "nmt.translate.translator",
    "Translation": "nmt.translate.results",
    "Candidate": "nmt.translate.results",
    "AttentionMap": "nmt.translate.results",
    "PairScore": "nmt.translate.results",
    "Hypothesis": "nmt.search.hypothesis",
    "train_run": "nmt.train.experiment",
    "Outcome": "nmt.train.progress",
    "evaluate_run": "nmt.translate.evaluation",
    "Scores": "nmt.scoring",
    "SystemRow": "nmt.scoring",
    "Comparison": "nmt.translate.evaluation",
    "ByDirection": "nmt.translate.evaluation",
    "load_config": "nmt.config",
    "Experiment": "nmt.config",
}

if TYPE_CHECKING:
    from nmt.config import Experiment, load_config
    from nmt.scoring import Scores, SystemRow
    from nmt.search.hypothesis import Hypothesis
    from nmt.train.experiment import train_run
    from nmt.train.progress import Outcome
    from nmt.translate.evaluation import ByDirection, Comparison, evaluate_run
    from nmt.translate.results import AttentionMap, Candidate, PairScore, Translation
    from nmt.translate.translator import Translator


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'nmt' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
