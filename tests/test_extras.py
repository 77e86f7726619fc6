"""A command whose pip extra is missing stops at once with the pip line that installs it."""

import sys

import pytest
from typer.testing import CliRunner

from nmt.cli import app
from nmt.errors import UserError
from nmt.extras import EXTRAS, require_extra


@pytest.mark.parametrize(
    "module, args, extra",
    [
        ("uvicorn", ["serve", "--checkpoint", "model.pt"], "serve"),
        ("fastapi", ["serve", "--checkpoint", "model.pt"], "serve"),
        ("ctranslate2", ["export", "--checkpoint", "model.pt", "--output", "out"], "ctranslate2"),
        ("ctranslate2", ["translate", "--engine", "ctranslate2", "--model", "out"], "ctranslate2"),
    ],
)
def test_a_missing_extra_is_one_line_with_its_pip_line(module, args, extra, monkeypatch):
    monkeypatch.setitem(sys.modules, module, None)  # as if it were not installed
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: ") and result.output.count("\n") == 1
    assert f"{module}, which is not installed" in result.output
    assert f"pip install 'nmt[{extra}]'" in result.output


def test_every_extra_of_pyproject_is_known_here():
    from pathlib import Path

    import tomllib

    pyproject = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
    extras = set(pyproject["project"]["optional-dependencies"]) - {"dev"}
    assert extras == set(EXTRAS)


def test_installed_extras_pass(monkeypatch):
    for extra in EXTRAS:
        require_extra(extra, "this test")  # make setup installs them all (nmt[dev])
    monkeypatch.setitem(sys.modules, "tensorboard", None)
    with pytest.raises(UserError, match=r"^train.tensorboard: true needs tensorboard"):
        require_extra("tensorboard", "train.tensorboard: true")
