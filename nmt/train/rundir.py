"""The run directory: one run's files, never mixed with another's.

It is checked before any work and written only once the corpus has loaded, so a bad
config or corpus leaves an old run (even one about to be `--overwrite`n) untouched.
Log lines from before it exists are held back and land at the top of `train.log`.
"""

from __future__ import annotations

import logging
import logging.handlers
import re
from pathlib import Path

import yaml

from nmt.checkpoint import remove_temporaries
from nmt.config import Experiment, config_to_dict
from nmt.data.tokenizer import TAGS_FILE, Tokenizer
from nmt.errors import UserError
from nmt.outputs import write_atomically
from nmt.terminal import console_log

RUN_FILES = (
    "config.yaml",
    "metrics.jsonl",
    "train.log",
    "best.pt",
    "last.pt",
    "test.hyp",
    "spm.model",
    "spm.src.model",
    "spm.tgt.model",
    TAGS_FILE,
)


def check_run_dir(run_dir: Path, overwrite: bool) -> None:
    """Refuses a directory that holds another run, unless it is to be overwritten."""
    if run_dir.exists() and not run_dir.is_dir():
        raise UserError(f"--run-dir {run_dir} is a file, not a directory. Choose another.")
    found = [path.name for path in run_files(run_dir)]
    if found and not overwrite:
        raise UserError(
            f"run directory {run_dir} already holds a run ({', '.join(found)}). Pass "
            "--resume to continue it, --overwrite to replace it, or choose another --run-dir."
        )


def start_run(run_dir: Path, config: Experiment, tokenizer: Tokenizer) -> None:
    """Removes the files of an old run, then writes the resolved config and the tokenizer."""
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        remove_temporaries(run_dir)
        for path in run_files(run_dir):
            path.unlink(missing_ok=True)
        save_config(run_dir, config)
        tokenizer.save(run_dir)
    except OSError as error:
        raise UserError(
            f"cannot write {error.filename or run_dir}: {error.strerror or error}. "
            "Choose another --run-dir or fix its permissions."
        ) from None


def save_config(run_dir: Path, config: Experiment) -> None:
    text = yaml.safe_dump(config_to_dict(config), sort_keys=False)
    write_atomically(run_dir / "config.yaml", text.encode("utf-8"))


class RunLog:
    """Logs of the `nmt` logger to stderr at once, and to `train.log` from `attach(run_dir)`.

    Only the main process of a distributed run logs (`active`); the others print warnings.
    """

    def __init__(self, active: bool = True) -> None:
        self.logger = logging.getLogger("nmt")
        self.level = logging.INFO if active else logging.WARNING
        self.console = console_log(self.level)
        self.early = logging.handlers.MemoryHandler(capacity=10_000, flushLevel=logging.CRITICAL)
        self.handlers: list[logging.Handler] = [self.early] if active else []

    def __enter__(self) -> RunLog:
        self.console.__enter__()
        for handler in self.handlers:
            self.logger.addHandler(handler)
        return self

    def attach(self, run_dir: Path) -> None:
        """Starts `train.log` with the lines held back so far."""
        file_handler = logging.FileHandler(run_dir / "train.log", encoding="utf-8")
        file_handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", "%H:%M:%S"))
        self.early.setTarget(file_handler)
        self.early.close()  # flushes into train.log
        self.logger.removeHandler(self.early)
        self.handlers = [file_handler]
        self.logger.addHandler(file_handler)

    def __exit__(self, *exc_info) -> None:
        for handler in self.handlers:
            self.logger.removeHandler(handler)
            handler.close()
        self.console.__exit__(*exc_info)


def run_files(run_dir: Path) -> list[Path]:
    """The files in `run_dir` that a run writes: what a new run refuses to start over
    without --overwrite, and removes with it. Anything else there is left alone."""
    written = [run_dir / name for name in RUN_FILES if (run_dir / name).exists()]
    return [
        *written,
        *step_checkpoints(run_dir),
        *sorted(run_dir.glob("events.out.tfevents.*")),
        *sorted(run_dir.glob("test.*.hyp")),  # one per direction
    ]


STEP_CHECKPOINT = re.compile(r"step-(\d+)\.pt")


def step_checkpoints(run_dir: Path) -> list[Path]:
    """RUN/step-NNNNNN.pt files, oldest first (a step-avg.pt of the user's is not one)."""
    steps = {
        path: int(match[1])
        for path in run_dir.glob("step-*.pt")
        if (match := STEP_CHECKPOINT.fullmatch(path.name))
    }
    return sorted(steps, key=steps.__getitem__)
