"""What the commands show on stderr: a progress line on a terminal only, and the `nmt`
logger's lines by one handler however the commands nest."""

import io
import logging

from nmt.terminal import ProgressLine, console_log


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def on_a_terminal(monkeypatch) -> Terminal:
    """stderr a terminal, from here on (pytest sets its own stderr before each test runs)."""
    screen = Terminal()
    monkeypatch.setattr("sys.stderr", screen)
    return screen


def test_the_progress_line_counts_lines_speed_and_time_left(monkeypatch):
    terminal = on_a_terminal(monkeypatch)
    progress = ProgressLine("translating", total=5000, every=0.0, after=0.0)
    progress.started -= 10.0  # ten seconds in
    progress.advance(1200)
    shown = terminal.getvalue()
    assert shown.startswith("\r\033[K") and "translating: 1,200/5,000 lines, 120 lines/s" in shown
    assert shown.endswith("ETA 0:00:31")  # 3,800 lines at 120 a second
    progress.close()
    assert terminal.getvalue().endswith("\r\033[K")  # the line is cleared at the end


def test_without_a_total_there_is_no_eta_and_a_short_job_shows_nothing(monkeypatch):
    terminal = on_a_terminal(monkeypatch)
    unknown = ProgressLine("translating", every=0.0, after=0.0)
    unknown.advance(7)
    assert "translating: 7 lines" in terminal.getvalue() and "ETA" not in terminal.getvalue()
    terminal.truncate(0)
    short = ProgressLine("scoring", total=10)  # the first line comes after a second
    short.advance(10)
    short.close()
    assert terminal.getvalue() == ""


def test_no_progress_line_in_a_pipe_or_a_log(monkeypatch):
    pipe = io.StringIO()
    monkeypatch.setattr("sys.stderr", pipe)
    progress = ProgressLine("translating", total=10, every=0.0, after=0.0)
    progress.advance(5)
    progress.close()
    assert pipe.getvalue() == ""


def test_the_log_reaches_stderr_by_one_handler_at_the_lowest_level_asked(monkeypatch):
    stderr = io.StringIO()
    monkeypatch.setattr("sys.stderr", stderr)
    logger = logging.getLogger("nmt")
    before = list(logger.handlers)
    with console_log(logging.WARNING):
        logger.info("hidden")
        with console_log(logging.INFO):
            logger.info("shown")
            logger.warning("once")
        logger.info("hidden again")
    logger.warning("after")  # not by the console any more
    assert stderr.getvalue() == "shown\nonce\n"
    assert logger.handlers == before
