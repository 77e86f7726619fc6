"""Search written once against a small model interface (encode, init_state, step,
state.select): greedy, beam and sampling, and ensembles that decode as one model."""

from nmt.search.beam import beam_search
from nmt.search.ensemble import Ensemble
from nmt.search.greedy import greedy_search
from nmt.search.hypothesis import Hypothesis, SearchModel, length_penalty, max_lengths
from nmt.search.sampling import sample_search

__all__ = [
    "Ensemble",
    "Hypothesis",
    "SearchModel",
    "beam_search",
    "greedy_search",
    "length_penalty",
    "max_lengths",
    "sample_search",
]
