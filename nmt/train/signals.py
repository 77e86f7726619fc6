"""SIGINT and SIGTERM as a request to stop training after the current step."""

from __future__ import annotations

import signal
import sys
import threading


class StopRequest:
    """Within `with StopRequest() as stop:`, SIGINT/SIGTERM set `stop.requested` instead of
    killing the process; a second SIGINT raises KeyboardInterrupt at once."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.requested = False
        self.signal: str | None = None  # the name of the first signal received
        self._previous: dict = {}

    def __enter__(self) -> StopRequest:
        if threading.current_thread() is threading.main_thread():
            for number in self.SIGNALS:
                self._previous[number] = signal.signal(number, self._handle)
        return self

    def __exit__(self, *exc_info) -> None:
        for number, handler in self._previous.items():
            signal.signal(number, handler)

    def _handle(self, number: int, frame) -> None:
        if self.requested and number == signal.SIGINT:
            raise KeyboardInterrupt
        self.requested = True
        name = signal.Signals(number).name
        self.signal = self.signal or name
        print(
            f"\n{name}: stopping after this step and saving last.pt (Ctrl-C again: stop now)",
            file=sys.stderr,
            flush=True,
        )
