"""What the commands show on stderr: the `nmt` logger's lines, and a progress line rewritten
in place, shown only when stderr is a terminal (never in a pipe or a log file)."""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
import time
from collections.abc import Iterator


def show_line(text: str) -> None:
    """Rewrites the terminal's current line with `text`."""
    if sys.stderr.isatty():
        sys.stderr.write(f"\r\033[K{text}")
        sys.stderr.flush()


def clear_line() -> None:
    if sys.stderr.isatty():
        sys.stderr.write("\r\033[K")
        sys.stderr.flush()


class ProgressLine:
    """'translating: 1,200/5,000 lines, 48 lines/s, ETA 1:19' (no total: no ETA), redrawn at
    most every `every` seconds and first after `after` seconds, so a short job shows
    nothing. Thread-safe: decoding threads report their batches themselves."""

    def __init__(self, what: str, total: int | None = None, every: float = 0.2, after: float = 1.0):
        self.what, self.total, self.every = what, total, every
        self.done = 0
        self.started = time.monotonic()
        self.drawn = self.started + after - every  # the first draw comes `after` in
        self.shown = False
        self.lock = threading.Lock()

    def advance(self, count: int) -> None:
        with self.lock:
            self.done += count
            now = time.monotonic()
            if now - self.drawn >= self.every:
                self.drawn, self.shown = now, True
                show_line(self.text(now - self.started))

    def text(self, seconds: float) -> str:
        rate = self.done / max(seconds, 1e-9)
        if self.total is None:
            return f"{self.what}: {self.done:,} lines, {rate:.0f} lines/s"
        left = (self.total - self.done) / max(rate, 1e-9)
        eta = f"{int(left // 3600)}:{int(left % 3600 // 60):02d}:{int(left % 60):02d}"
        return f"{self.what}: {self.done:,}/{self.total:,} lines, {rate:.0f} lines/s, ETA {eta}"

    def close(self) -> None:
        with self.lock:
            if self.shown:
                clear_line()


class _Console(logging.Handler):
    """One line per record on whatever sys.stderr is when it comes (a caller may swap it)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stderr.write(self.format(record) + "\n")
        except Exception:  # as logging's own handlers do: a broken stderr is not fatal
            self.handleError(record)


@contextlib.contextmanager
def console_log(level: int) -> Iterator[None]:
    """The `nmt` logger's messages at `level` and above on stderr while it lasts, by one
    handler however it is nested (the lowest level asked for wins, until its exit)."""
    logger = logging.getLogger("nmt")
    console = next((h for h in logger.handlers if isinstance(h, _Console)), None)
    owned = console is None
    if owned:
        console = _Console(level)
        console.setFormatter(logging.Formatter("%(message)s"))
        logger.addHandler(console)
    levels = console.level, logger.level
    console.setLevel(min(level, console.level))
    logger.setLevel(min(level, logger.getEffectiveLevel()))
    try:
        yield
    finally:
        console.setLevel(levels[0])
        logger.setLevel(levels[1])
        if owned:
            logger.removeHandler(console)
