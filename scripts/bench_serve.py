"""Load test of `nmt serve`: throughput and latency with 1, 8 and 32 concurrent clients.

Starts the server on a free loopback port, then for each level runs that many clients, each
posting one test sentence per request over its own keep-alive connection, until the level's
sentences are done or its time is up. Prints one JSON line per level: sentences/s, p50/p99
latency, errors and the server's peak resident memory; then one for a single greedy
sentence at a time on the idle server. With --baseline, first the sentences/s of
`nmt translate --batch-size 64` (the same translator call, timed without start-up) on the
same checkpoint, beam and sentences, with torch's default threads (one per core).

    python scripts/bench_serve.py                        # Multi30k rnnsearch if present
    python scripts/bench_serve.py --checkpoint runs/x/best.pt --baseline --clients 1 8 32
"""

from __future__ import annotations

import argparse
import http.client
import json
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MULTI30K = ROOT.parent / "shared" / "data" / "multi30k"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--checkpoint", type=Path, default=ROOT / "runs" / "multi30k_de_en_rnnsearch" / "best.pt"
    )
    parser.add_argument("--input", type=Path, default=MULTI30K / "test_2016_flickr.de")
    parser.add_argument("--beam", type=int, help="default: the checkpoint's decode.beam")
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--sentences", type=int, default=320, help="per level (at most)")
    parser.add_argument("--max-seconds", type=float, default=120, help="per level (at most)")
    parser.add_argument("--idle-requests", type=int, default=100, help="greedy, one at a time")
    parser.add_argument("--workers", type=int, help="the server's decoding workers")
    parser.add_argument("--baseline", action="store_true", help="time nmt translate first")
    args = parser.parse_args()
    lines = [line for line in args.input.read_text("utf-8").splitlines() if line.strip()]
    lines = lines[: args.sentences]
    if args.baseline:
        print(json.dumps(baseline(args.checkpoint, lines, args.beam)), flush=True)
    with running_server(args.checkpoint, args.workers) as (port, process):
        model = json.loads(get(port, "/translator/models"))[0]["model_id"]
        options = {"beam": args.beam} if args.beam else {}
        for clients in args.clients:
            result = load(port, model, lines, clients, options, args.max_seconds)
            print(json.dumps({"clients": clients, **options, **result, **rss(process)}), flush=True)
        idle = lines[: args.idle_requests]
        result = load(port, model, idle, 1, {"beam": 1}, args.max_seconds)
        print(json.dumps({"idle_greedy": True, **result, **rss(process)}), flush=True)


def baseline(checkpoint: Path, lines: list[str], beam: int | None) -> dict:
    """What `nmt translate --batch-size 64` spends translating (load time excluded)."""
    import torch

    from nmt import Translator

    translator = Translator.load(
        checkpoint, device="cpu", workers=None, **({"beam": beam} if beam else {})
    )
    started = time.perf_counter()
    translator.translate(lines, batch_size=64)
    seconds = time.perf_counter() - started
    return {
        "baseline": "nmt translate --batch-size 64",
        "beam": translator.decode.beam,
        "threads": torch.get_num_threads(),
        "sentences": len(lines),
        "seconds": round(seconds, 2),
        "sentences_per_s": round(len(lines) / seconds, 1),
    }


class running_server:
    """`nmt serve` on 127.0.0.1, a free port; stopped with SIGTERM (and must exit 0)."""

    def __init__(self, checkpoint: Path, workers: int | None):
        self.command = [sys.executable, "-m", "nmt", "serve", "--checkpoint", str(checkpoint)]
        self.command += ["--port", "0", "--max-sentences", "64"]
        self.command += ["--workers", str(workers)] if workers else []

    def __enter__(self) -> tuple[int, subprocess.Popen]:
        self.log = tempfile.NamedTemporaryFile("w+", suffix=".log")  # noqa: SIM115
        self.process = subprocess.Popen(self.command, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and self.process.poll() is None:
            found = re.search(r"http://127\.0\.0\.1:(\d+)/", Path(self.log.name).read_text())
            if found and _healthy(int(found.group(1))):
                return int(found.group(1)), self.process
            time.sleep(0.2)
        self.__exit__()
        raise SystemExit(f"nmt serve did not start:\n{Path(self.log.name).read_text()}")

    def __exit__(self, *_: object) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = self.process.wait()
        if code != 0:
            print(f"nmt serve exited {code}:\n{Path(self.log.name).read_text()}", file=sys.stderr)
        self.log.close()


def _healthy(port: int) -> bool:
    try:
        return json.loads(get(port, "/translator/health")) == {"status": "ok"}
    except OSError:
        return False


def get(port: int, path: str) -> bytes:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", path)
        return connection.getresponse().read()
    finally:
        connection.close()


def load(
    port: int, model: str, lines: list[str], clients: int, options: dict, max_seconds: float
) -> dict:
    """`clients` threads post the lines one per request until done or out of time."""
    pending = iter(enumerate(lines))
    lock = threading.Lock()
    latencies: list[float] = []
    errors: list[str] = []
    deadline = time.monotonic() + max_seconds

    def client() -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=max_seconds)
        headers = {"Content-Type": "application/json"}
        while time.monotonic() < deadline:
            with lock:
                index, line = next(pending, (None, None))
            if line is None:
                break
            body = json.dumps([{"src": line, "id": model, **options}])
            started = time.perf_counter()
            try:
                connection.request("POST", "/translator/translate", body, headers)
                response = connection.getresponse()
                answer = response.read()
                ok = response.status == 200 and json.loads(answer)[0][0]["src"] == line
            except (OSError, http.client.HTTPException, ValueError) as error:
                ok, answer = False, repr(error).encode()
                connection.close()
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=max_seconds)
            with lock:
                if ok:
                    latencies.append(time.perf_counter() - started)
                else:
                    errors.append(f"line {index}: {answer[:200]!r}")
        connection.close()

    started = time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - started
    for error in errors[:3]:
        print(f"error: {error}", file=sys.stderr)
    return {
        "sentences": len(latencies),
        "seconds": round(seconds, 2),
        "sentences_per_s": round(len(latencies) / seconds, 1),
        "p50_ms": round(1000 * statistics.median(latencies), 1) if latencies else None,
        "p99_ms": round(1000 * _quantile(latencies, 0.99), 1) if latencies else None,
        "errors": len(errors),
    }


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def rss(process: subprocess.Popen) -> dict:
    """The server's peak resident memory so far (Linux: VmHWM)."""
    status = Path(f"/proc/{process.pid}/status").read_text()
    found = re.search(r"VmHWM:\s+(\d+) kB", status)
    return {"server_peak_rss_mb": round(int(found.group(1)) / 1024) if found else None}


if __name__ == "__main__":
    main()
