"""The micro-batching queue on its own: who is batched with whom, and who gets what."""

import asyncio
import logging
import threading
import time

import pytest

from nmt.errors import UserError
from nmt.serve.microbatch import MicroBatcher


def run_batches(batcher, jobs, stagger=0.0):
    """Submits (key, items) jobs from one event loop, `stagger` seconds apart."""

    async def main():
        batcher.start()
        try:

            async def submit(index, key, items):
                await asyncio.sleep(index * stagger)
                return await batcher.submit(key, items)

            return await asyncio.gather(
                *(submit(i, key, items) for i, (key, items) in enumerate(jobs)),
                return_exceptions=True,
            )
        finally:
            await batcher.stop()

    return asyncio.run(main())


def recording(calls, fail_on=None):
    def run(key, items):
        assert threading.current_thread() is not threading.main_thread()  # off the event loop
        calls.append((key, list(items)))
        if fail_on in items:
            raise ValueError(f"cannot decode {fail_on!r}")
        return [f"{key}:{item}" for item in items]

    return run


def test_requests_arriving_together_share_one_call_and_get_their_own_results():
    calls = []
    jobs = [("a", [1, 2]), ("a", [3]), ("a", [4, 5, 6])]
    results = run_batches(MicroBatcher(recording(calls), window=0.05), jobs)
    assert results == [["a:1", "a:2"], ["a:3"], ["a:4", "a:5", "a:6"]]
    assert calls == [("a", [1, 2, 3, 4, 5, 6])]


def test_keys_are_decoded_apart_and_batches_respect_the_maximum():
    calls = []
    jobs = [("a", [1]), ("b", [2]), ("a", [3]), ("a", [4]), ("a", [5])]
    results = run_batches(MicroBatcher(recording(calls), window=0.05, max_batch=3), jobs)
    assert results == [["a:1"], ["b:2"], ["a:3"], ["a:4"], ["a:5"]]
    assert calls == [("a", [1, 3]), ("b", [2]), ("a", [4, 5])]


def test_a_request_alone_waits_no_longer_than_the_window():
    calls = []
    jobs = [("a", [1]), ("a", [2])]
    results = run_batches(MicroBatcher(recording(calls), window=0.001), jobs, stagger=0.2)
    assert results == [["a:1"], ["a:2"]]
    assert calls == [("a", [1]), ("a", [2])]


def test_one_failing_request_does_not_fail_its_neighbours():
    calls = []
    jobs = [("a", [1]), ("a", ["bad"]), ("a", [3])]
    results = run_batches(MicroBatcher(recording(calls, "bad"), window=0.05), jobs)
    assert results[0] == ["a:1"] and results[2] == ["a:3"]
    with pytest.raises(ValueError, match="cannot decode 'bad'"):
        raise results[1]


def test_a_refused_request_is_the_clients_error_and_logs_no_traceback(caplog):
    """A UserError (answered 4xx) is noted in one line; a bug is logged with its traceback."""

    def refusing(key, items):
        if "bad" in items:
            raise UserError("--through en: en is the source's language")
        raise RuntimeError("a bug")

    with caplog.at_level(logging.INFO, logger="nmt.serve.microbatch"):
        results = run_batches(MicroBatcher(refusing, window=0.0), [("a", ["bad"]), ("b", [1])])
    assert isinstance(results[0], UserError) and isinstance(results[1], RuntimeError)
    refused, bug = (r for r in caplog.records if r.name == "nmt.serve.microbatch")
    assert refused.levelno == logging.INFO and refused.exc_info is None
    assert "--through en" in refused.getMessage()
    assert bug.levelno == logging.ERROR and bug.exc_info is not None


def test_an_empty_request_needs_no_decoding():
    calls = []
    assert run_batches(MicroBatcher(recording(calls)), [("a", [])]) == [[]]
    assert calls == []


def test_after_a_batch_of_n_the_worker_waits_for_n_within_the_window():
    calls = []
    # a wave of 3 together, then 3 more 20 ms apart (clients coming back), then 1 alone
    delays = [0, 0, 0, 0.3, 0.32, 0.34, 1.0]
    jobs = [("a", [index]) for index in range(len(delays))]

    async def main():
        batcher = MicroBatcher(recording(calls), window=0.2)
        batcher.start()
        try:

            async def submit(delay, key, items):
                await asyncio.sleep(delay)
                return await batcher.submit(key, items)

            started = asyncio.get_running_loop().time()
            results = await asyncio.gather(
                *(submit(d, k, i) for d, (k, i) in zip(delays, jobs, strict=True))
            )
            return results, asyncio.get_running_loop().time() - started
        finally:
            await batcher.stop()

    results, seconds = asyncio.run(main())
    assert results == [[f"a:{index}"] for index in range(len(delays))]
    assert [items for _, items in calls] == [[0, 1, 2], [3, 4, 5], [6]]
    assert seconds < 1.0 + 0.2 + 0.5  # the lone last job waited at most the window


def test_free_workers_split_a_wave_and_decode_side_by_side():
    spans = []

    def slow(key, items):
        started = time.monotonic()
        time.sleep(0.2)
        spans.append((threading.current_thread().name, list(items), started, time.monotonic()))
        return [f"{key}:{item}" for item in items]

    jobs = [("a", [index]) for index in range(6)]
    results = run_batches(MicroBatcher(slow, window=0.05, workers=2), jobs)
    assert results == [[f"a:{index}"] for index in range(6)]
    assert sorted(len(items) for _, items, _, _ in spans) == [3, 3]  # a fair share each
    (first, _, start_a, end_a), (second, _, start_b, end_b) = spans
    assert first != second and start_a < end_b and start_b < end_a  # they overlapped
