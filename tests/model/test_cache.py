"""The preallocated self-attention cache against keys and values prepared all at once."""

import pytest
import torch

from nmt.model.attention import Memory
from nmt.model.cache import BLOCK, KeyValueCache, SpentCacheError

HEADS, HEAD_DIM = 2, 3


def positions(rows: int, length: int, seed: int) -> Memory:
    """Keys and values [rows, H, length, d], as a self-attention prepares them."""
    generator = torch.Generator().manual_seed(seed)
    keys, values = torch.randn(2, rows, HEADS, length, HEAD_DIM, generator=generator)
    return Memory(keys, values, None)


def test_positions_written_one_at_a_time_past_a_block_read_back_as_written():
    whole = positions(3, BLOCK + 5, seed=0)
    cache = KeyValueCache.empty(3, HEADS, HEAD_DIM, whole.keys)
    for t in range(BLOCK + 5):
        cache = cache.appended(
            Memory(whole.keys[:, :, t : t + 1], whole.values[:, :, t : t + 1], None)
        )
        memory = cache.memory()
        assert torch.equal(memory.keys, whole.keys[:, :, : t + 1])
        assert torch.equal(memory.values, whole.values[:, :, : t + 1])
    assert cache.buffer.size(1) == 2 * BLOCK and memory.mask is None


@pytest.mark.parametrize("rows", [[2, 0, 0, 1], [1], [0, 1, 2, 2, 2, 1, 0, 0]])
def test_a_reordered_cache_holds_the_rows_it_was_given_and_grows_on_from_them(rows):
    """Reordering (dropping, repeating: more rows than the buffer had) then appending equals
    gathering the rows of keys prepared at once; the same buffers serve reorder after reorder."""
    whole = positions(3, 6, seed=1)
    cache = KeyValueCache.empty(3, HEADS, HEAD_DIM, whole.keys)
    cache = cache.appended(Memory(whole.keys[:, :, :4], whole.values[:, :, :4], None))
    index = torch.tensor(rows)
    cache = cache.select(index)
    newer = positions(len(rows), 2, seed=2)
    cache = cache.appended(newer)
    expected_keys = torch.cat([whole.keys[index, :, :4], newer.keys], 2)
    expected_values = torch.cat([whole.values[index, :, :4], newer.values], 2)
    assert torch.equal(cache.memory().keys, expected_keys)
    assert torch.equal(cache.memory().values, expected_values)
    back = torch.arange(len(rows)).flip(0)
    again = cache.select(back).memory()
    assert torch.equal(again.keys, expected_keys[back])
    assert torch.equal(again.values, expected_values[back])


def test_reorders_take_turns_in_two_buffers_and_a_spent_cache_refuses_use():
    """After the first reorder no step allocates: each reorder gathers into the buffer the
    previous one left, and the cache handed on is the only one that may be used."""
    whole = positions(4, 3, seed=3)
    cache = KeyValueCache.empty(4, HEADS, HEAD_DIM, whole.keys)
    cache = cache.appended(Memory(whole.keys[:, :, :1], whole.values[:, :, :1], None))
    seen = []
    for t in range(1, 3):
        spent = cache
        cache = cache.select(torch.tensor([3, 1, 0, 2]))
        with pytest.raises(SpentCacheError, match="a cache is used once"):
            spent.memory()
        with pytest.raises(SpentCacheError, match="a cache is used once"):
            spent.select(torch.tensor([0]))
        cache = cache.appended(
            Memory(whole.keys[:, :, t : t + 1], whole.values[:, :, t : t + 1], None)
        )
        seen.append(cache.buffer.data_ptr())
    first = cache.select(torch.tensor([0, 1]))
    seen.append(first.buffer.data_ptr())
    assert seen[0] != seen[1] and seen[2] == seen[0]  # two buffers, taking turns
