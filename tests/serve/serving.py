"""Running `nmt serve` for tests on a free loopback port, always stopped: as a real process,
or (to patch what it serves) its app in a thread of the test's own process."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Client:
    url: str

    def request(self, method, path, body=None, headers=None, timeout=60):
        """(status, decoded JSON or text); `body` is bytes as given, or JSON-encoded."""
        data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.url + path, data=data, method=method, headers=headers or {}
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                status, raw, kind = response.status, response.read(), response.headers
        except urllib.error.HTTPError as error:
            status, raw, kind = error.code, error.read(), error.headers
        is_json = kind.get("content-type", "").startswith("application/json")
        return status, json.loads(raw) if is_json else raw.decode("utf-8", "replace")

    def translate(self, items, **kwargs):
        return self.request("POST", "/translator/translate", items, **kwargs)


@dataclass
class Server(Client):
    process: subprocess.Popen
    log: Path

    def stop(self, timeout: float = 60) -> int:
        """SIGTERM, as a service manager stops it; the exit status."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=timeout)


@contextlib.contextmanager
def running_server(log: Path, *args) -> Iterator[Server]:
    """`python -m nmt serve --port 0 ARGS` on 127.0.0.1; the port it picked is read from its
    log. Killed if SIGTERM did not stop it within a minute."""
    command = [sys.executable, "-m", "nmt", "serve", "--port", "0", "--workers", "1"]
    with log.open("w") as sink:
        process = subprocess.Popen(
            [*command, *map(str, args)], stdout=sink, stderr=subprocess.STDOUT, env={**os.environ}
        )
    try:
        server = Server(_wait_for_url(process, log), process, log)
        deadline = time.monotonic() + 60
        while not _healthy(server):
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        yield server
    finally:
        try:
            Server("", process, log).stop()
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextlib.contextmanager
def serving_app(app) -> Iterator[Client]:
    """`app` (from create_app) served by uvicorn in a thread of this process."""
    import uvicorn

    listener = socket.create_server(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]})
    thread.start()
    try:
        deadline = time.monotonic() + 60
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.05)
        yield Client(f"http://127.0.0.1:{listener.getsockname()[1]}")
    finally:
        server.should_exit = True
        thread.join(timeout=60)
        listener.close()


def _healthy(server: Client) -> bool:
    try:
        return server.request("GET", "/translator/health", timeout=5)[0] == 200
    except OSError:  # refused or timed out: not up yet
        return False


def _wait_for_url(process: subprocess.Popen, log: Path) -> str:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = re.search(r"on (http://127\.0\.0\.1:\d+)/", log.read_text())
        if found:
            return found.group(1)
        assert process.poll() is None, f"nmt serve exited {process.returncode}:\n{log.read_text()}"
        time.sleep(0.1)
    raise AssertionError(f"nmt serve did not start within 60 s:\n{log.read_text()}")
