"""Covering arrays for combination tests: few cases in which every pair (or triple) of option
values occurs at least once, greedily, as AETG (Cohen et al. 1997) builds them.

`factors` maps each option to its values; `valid(case)` judges a partial case (a dict of
some options' values), so that combinations no command can be given are never asked for.
The cases are deterministic: the same factors give the same cases.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

Case = dict[str, Any]
Tuple = tuple[tuple[str, Any], ...]  # ((option, value), ...) in the factors' order


def required(
    factors: Mapping[str, Sequence[Any]], valid: Callable[[Case], bool], strength: int = 2
) -> set[Tuple]:
    """Every valid combination of `strength` option values."""
    wanted = set()
    for names in itertools.combinations(factors, strength):
        for values in itertools.product(*(range(len(factors[name])) for name in names)):
            case = {name: factors[name][value] for name, value in zip(names, values, strict=True)}
            if valid(case):
                wanted.add(tuple((name, index) for name, index in zip(names, values, strict=True)))
    return wanted


def covering_cases(
    factors: Mapping[str, Sequence[Any]], valid: Callable[[Case], bool], strength: int = 2
) -> list[Case]:
    """Valid cases, each a value for every option, that together hold every combination
    `required` lists. A case starts from the first combination not yet held; each other
    option then takes the valid value that holds the most new combinations (the first of
    equals, so the first value, the default, fills what nothing asks for)."""
    uncovered = required(factors, valid, strength)
    names = list(factors)
    cases = []
    while uncovered:
        chosen = dict(min(uncovered))  # option -> value index
        for name in names:
            if name in chosen:
                continue
            gains = []
            for index in range(len(factors[name])):
                trial = {**chosen, name: index}
                if valid(_values(factors, trial)):
                    gains.append((_new(trial, name, uncovered, strength, names), -index))
            chosen[name] = -max(gains)[1]
        case = _values(factors, chosen)
        assert valid(case), case
        uncovered -= _held(chosen, names, strength)
        cases.append(case)
    return cases


def _values(factors: Mapping[str, Sequence[Any]], chosen: dict[str, int]) -> Case:
    return {name: factors[name][index] for name, index in chosen.items()}


def _held(chosen: dict[str, int], names: list[str], strength: int) -> set[Tuple]:
    ordered = [name for name in names if name in chosen]
    return {
        tuple((name, chosen[name]) for name in combination)
        for combination in itertools.combinations(ordered, strength)
    }


def _new(
    chosen: dict[str, int], name: str, uncovered: set[Tuple], strength: int, names: list[str]
) -> int:
    """How many uncovered combinations the option `name`'s choice completes."""
    others = [other for other in names if other in chosen and other != name]
    count = 0
    for combination in itertools.combinations(others, strength - 1):
        ordered = sorted((*combination, name), key=names.index)
        count += tuple((option, chosen[option]) for option in ordered) in uncovered
    return count
