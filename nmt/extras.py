"""The optional parts of nmt, each a pip extra (pyproject.toml): what a command checks first,
so a missing package is one line saying how to install it, not an ImportError."""

from __future__ import annotations

import importlib.util

from nmt.errors import UserError

EXTRAS = {  # extra -> the modules it provides
    "serve": ("fastapi", "fastapi_offline", "uvicorn"),
    "ctranslate2": ("ctranslate2",),
    "tensorboard": ("tensorboard",),
    "hub": ("transformers", "huggingface_hub", "safetensors"),
}


def require_extra(extra: str, needed_by: str) -> None:
    """A UserError naming the pip line unless every module of `extra` can be imported."""
    missing = [module for module in EXTRAS[extra] if importlib.util.find_spec(module) is None]
    if missing:
        raise UserError(
            f"{needed_by} needs {', '.join(missing)}, which {'is' if len(missing) == 1 else 'are'}"
            f" not installed. Install {'it' if len(missing) == 1 else 'them'} with: "
            f"pip install 'nmt[{extra}]'"
        )
