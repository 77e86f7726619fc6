"""IBM Model 1 in blocks: the same table whatever the block size, and the table a naive
dictionary-and-loops EM computes."""

import random
from collections import defaultdict

import pytest
import torch

from nmt.corpus.lexical_table import PiecePairs, ibm_model_1


def naive_ibm_model_1(pairs, iterations):
    """EM as Brown et al. (1993) write it: t(f | e) from uniform, one expected count per
    target position spread over its sentence's source pieces."""
    table = defaultdict(lambda: 1.0)
    for _ in range(iterations):
        counts, totals = defaultdict(float), defaultdict(float)
        for src, tgt in pairs:
            if not src or not tgt:
                continue
            for t in tgt:
                norm = sum(table[(s, t)] for s in src)
                for s in src:
                    share = table[(s, t)] / norm
                    counts[(s, t)] += share
                    totals[s] += share
        table = defaultdict(float, {(s, t): c / totals[s] for (s, t), c in counts.items()})
    return dict(table)


def random_pairs(count, seed):
    generator = random.Random(seed)

    def side():
        return [generator.randrange(12) for _ in range(generator.randrange(0, 6))]

    return [(side(), side()) for _ in range(count)]


@pytest.mark.parametrize("block_links", [1, 7, 50, 10_000])
def test_blocks_of_any_size_learn_the_naive_table(block_links):
    pairs = random_pairs(60, seed=block_links)
    keys, table = ibm_model_1(PiecePairs.of(pairs), 12, 12, iterations=3, block_links=block_links)
    learnt = {(int(k) // 12, int(k) % 12): float(p) for k, p in zip(keys, table, strict=True)}
    expected = naive_ibm_model_1(pairs, iterations=3)
    assert learnt.keys() == expected.keys()
    for link, probability in expected.items():
        assert learnt[link] == pytest.approx(probability, rel=1e-9), link


def test_every_link_comes_once_in_some_block():
    pairs = PiecePairs.of(random_pairs(40, seed=3))
    per_pair = (pairs.src_offsets.diff() * pairs.tgt_offsets.diff()).tolist()
    sizes = [len(sources) for sources, _, _ in pairs.blocks(block_links=9)]
    assert sum(sizes) == sum(per_pair)
    # a block holds at most 9 links, or one pair of more (25 at most here)
    assert all(size <= 9 or size in per_pair for size in sizes) and len(sizes) > 10


def test_pairs_with_an_empty_side_are_left_out():
    pairs = PiecePairs.of([([1, 2], []), ([], [3]), ([4], [5, 6])])
    assert len(pairs) == 1 and pairs.src.tolist() == [4] and pairs.tgt.tolist() == [5, 6]
    assert pairs.src.dtype == torch.int32
