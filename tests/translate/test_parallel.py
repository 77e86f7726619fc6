"""Decoding side by side: each worker runs on one torch thread and in the caller's autocast,
and the caller's thread count is what it was before."""

import threading

import pytest
import torch

from nmt.translate.parallel import parallel_map


@pytest.fixture
def two_threads():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


def in_a_new_thread(function):
    found = []
    thread = threading.Thread(target=lambda: found.append(function()))
    thread.start()
    thread.join()
    return found[0]


def test_workers_run_on_one_thread_and_leave_the_process_as_it_was(two_threads):
    seen = parallel_map(lambda _: torch.get_num_threads(), range(4), workers=2)
    assert seen == [1, 1, 1, 1]
    assert torch.get_num_threads() == 2
    assert in_a_new_thread(torch.get_num_threads) == 2


def test_workers_decode_under_the_callers_autocast():
    def state(_):
        return torch.is_autocast_enabled("cpu"), torch.get_autocast_dtype("cpu")

    with torch.autocast("cpu", dtype=torch.bfloat16):
        inside = parallel_map(state, range(4), workers=2)
    assert inside == [(True, torch.bfloat16)] * 4
    assert parallel_map(state, range(4), workers=2)[0][0] is False
