"""The documentation says what the commands do: each command's synopsis in docs/commands.md
(serve's in docs/serving.md) lists exactly its options, and the README's Python example runs
as printed after `make train`."""

from __future__ import annotations

import re

import pytest
import typer
from typer.core import TyperOption

from conftest import ROOT, nmt
from nmt.cli import app

SYNOPSES = {"serve": ROOT / "docs" / "serving.md"}
TOP = typer.main.get_command(app).commands
GROUPS = {name for name, command in TOP.items() if hasattr(command, "commands")}
COMMANDS = sorted(  # a group's commands as "GROUP COMMAND"
    f"{name} {sub}" if name in GROUPS else name
    for name, command in TOP.items()
    for sub in (command.commands if name in GROUPS else [None])
)


def synopsis_flags(command: str) -> set[str]:
    """The --options in the lines of the docs' code blocks that show `nmt COMMAND` (with
    their indented continuation lines)."""
    text = SYNOPSES.get(command, ROOT / "docs" / "commands.md").read_text("utf-8")
    flags: set[str] = set()
    for block in re.findall(r"```\n(.*?)```", text, re.DOTALL):
        current = None
        for line in block.splitlines():
            if line.startswith("nmt "):
                words = line.split()
                current = " ".join(words[1:3]) if words[1] in GROUPS else words[1]
            elif not line.startswith(" "):
                current = None
            if current == command:
                flags |= set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", line.split("#")[0]))
    return flags


def command_options(command: str) -> list[set[str]]:
    """A command's options, each as the set of its names (aliases included)."""
    click_command = typer.main.get_command(app)
    for word in command.split():
        click_command = click_command.commands[word]
    return [
        {name for name in (*p.opts, *p.secondary_opts) if name.startswith("--")}
        for p in click_command.params
        if isinstance(p, TyperOption)
    ]


@pytest.mark.parametrize("command", COMMANDS)
def test_each_synopsis_lists_exactly_the_commands_options(command):
    documented = synopsis_flags(command)
    options = command_options(command)
    assert documented, f"no synopsis of nmt {command}"
    missing = [sorted(names)[0] for names in options if not names & documented]
    assert not missing, f"nmt {command}: its synopsis lacks {missing}"
    unknown = documented - set().union(*options)
    assert not unknown, f"nmt {command} has no option {sorted(unknown)}"


def test_the_readme_runs_as_printed_after_make_train(demo_rnnsearch, tmp_path, monkeypatch, capsys):
    """In a directory as `make train` leaves it (runs/demo: the session's trained demo
    RNNsearch), the quick start's commands and the Python example run as printed."""
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "demo").symlink_to(demo_rnnsearch)
    (tmp_path / "configs").symlink_to(ROOT / "configs")
    monkeypatch.chdir(tmp_path)
    readme = (ROOT / "README.md").read_text("utf-8")
    quick_start = readme.split("## Quick start", 1)[1].split("## ", 1)[0]
    commands = [line for line in quick_start.splitlines() if ".venv/bin/nmt " in line]
    assert len(commands) == 3
    sentence = "the small dog sees a bird."
    piped = nmt(*commands[0].split("| .venv/bin/nmt ")[1].split("#")[0].split(), input=sentence)
    assert piped.returncode == 0 and len(piped.stdout.splitlines()) == 1 and piped.stdout.strip()
    evaluated = nmt(*commands[1].split(".venv/bin/nmt ")[1].split("#")[0].split())
    assert evaluated.returncode == 0 and "BLEU" in evaluated.stdout
    (block,) = re.findall(r"```python\n(.*?)```", readme, re.DOTALL)
    exec(compile(block, "README.md", "exec"), {})
    printed = capsys.readouterr().out.splitlines()
    text, alignment = printed[0].split(" | ")
    assert text == piped.stdout.strip()  # beam 5, as the checkpoint's decode section says
    assert re.fullmatch(r"(\d+-\d+ ?)+", alignment)
    assert printed[1].startswith("BLEU ") and "nrefs:1" in printed[1]
