"""Plain YAML data into the config dataclasses, strictly: a typo in a key must fail loudly
rather than silently fall back to a default, so unknown keys (with the closest valid one
suggested), wrong types and out-of-range values are errors naming the dotted key. `--set
a.b=c` goes through the same builder.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import logging
import re
import types
import typing
from pathlib import Path
from typing import Any, Literal

from nmt.config.schema import ConfigError, Experiment, UnusedKeyError, join_key
from nmt.errors import UserError
from nmt.reads import record

log = logging.getLogger("nmt")


def build(cls: type, raw: Any, path: str = "") -> Any:
    """Turns plain YAML data into the dataclass `cls`, checking every key and value."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(path, f"expected a mapping of keys, got {_describe(raw)}")
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    for key in raw:
        if key not in names:
            raise ConfigError(join_key(path, str(key)), f"unknown key.{_suggest(str(key), names)}")
    values = {key: _convert(hints[key], value, join_key(path, key)) for key, value in raw.items()}
    try:
        return cls(**values)
    except ConfigError as error:
        raise type(error)(join_key(path, error.path), error.detail) from None


def _convert(hint: Any, value: Any, path: str) -> Any:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(hint)
        if value is None and type(None) in options:
            return None
        (inner,) = [option for option in options if option is not type(None)]
        return _convert(inner, value, path)
    if origin is Literal:
        choices = typing.get_args(hint)
        if value not in choices:
            allowed = ", ".join(repr(choice) for choice in choices)
            if not isinstance(value, str):
                raise ConfigError(path, f"expected one of {allowed}, got {_describe(value)}")
            raise ConfigError(path, f"{value!r} is not one of {allowed}.{_suggest(value, choices)}")
        return value
    if dataclasses.is_dataclass(hint):
        return build(hint, value, path)
    if origin is list:
        if not isinstance(value, list):
            raise ConfigError(path, f"expected a list, got {_describe(value)}")
        (item,) = typing.get_args(hint)
        return [_convert(item, entry, f"{path}[{index}]") for index, entry in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(path, f"expected a mapping, got {_describe(value)}")
        key_type, item = typing.get_args(hint)
        return {
            _convert(key_type, key, path): _convert(item, entry, join_key(path, str(key)))
            for key, entry in value.items()
        }
    if value is None:
        raise ConfigError(path, f"needs a {hint.__name__} value, got null")
    if hint is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if hint is float and isinstance(value, str) and _EXPONENT_FLOAT.fullmatch(value):
        return float(value)
    if hint is int and isinstance(value, bool) or not isinstance(value, hint):
        raise ConfigError(path, f"expected {hint.__name__}, got {_describe(value)}")
    return value


# YAML 1.1, which PyYAML follows, reads 1e-3 (an exponent but no dot) as a string.
_EXPONENT_FLOAT = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)[eE][-+]?\d+")


def _describe(value: Any) -> str:
    """Type and a short repr; containers by size, as YAML aliases can nest them exponentially."""
    if isinstance(value, (list, dict)):
        return f"a {type(value).__name__} of {len(value)} items"
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 60 else text[:57] + '...'}"


def _suggest(key: Any, candidates: typing.Sequence[Any]) -> str:
    close = difflib.get_close_matches(str(key), [str(c) for c in candidates], n=1, cutoff=0.6)
    return (
        f" Did you mean '{close[0]}'?" if close else f" Valid: {', '.join(map(str, candidates))}."
    )


def parse_override(text: str) -> tuple[list[str], Any]:
    """'model.attention.type=dot' -> (['model', 'attention', 'type'], 'dot'); values are YAML."""
    import yaml

    key, sep, value = text.partition("=")
    if not sep or not key.strip() or any(not part for part in key.strip().split(".")):
        raise ConfigError("", f"--set expects KEY=VALUE with a dotted key, got '{text}'")
    try:
        parsed = yaml.safe_load(value) if value.strip() else None
    except yaml.YAMLError:
        parsed = value
    return key.strip().split("."), parsed


def apply_override(raw: dict, keys: list[str], value: Any) -> None:
    node = raw
    for depth, key in enumerate(keys[:-1]):
        if node.get(key) is None:  # an absent section, or a null one (train.adapters: null)
            node[key] = {}
        child = node[key]
        if not isinstance(child, dict):
            raise ConfigError(".".join(keys[: depth + 1]), "is a value, not a section")
        node = child
    node[keys[-1]] = value


def load_config(path: str | Path, overrides: typing.Sequence[str] = ()) -> Experiment:
    """Reads a YAML experiment, applies `--set` overrides, and validates the result.

    An override that switches a type (`model.encoder.type`, `model.decoder.type`,
    `model.attention.type`) drops the keys of that section which the file set and the new
    type does not read, with one notice naming them; every other key stays strict, and a key
    the overrides set themselves is never dropped.
    """
    import yaml

    path = Path(path)
    try:
        text = record(path, "--config").read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"config file {path} does not exist.") from None
    except (OSError, UnicodeDecodeError) as error:
        raise UserError(f"config file {path} cannot be read: {error}") from None
    try:
        raw = yaml.safe_load(text) or {}
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(error, "problem", None) or str(error)
        raise UserError(f"config file {path} is not valid YAML{where}: {problem}.") from None
    if not isinstance(raw, dict):
        raise UserError(
            f"config file {path} must hold a mapping of sections, got {_describe(raw)}."
        )
    raw.setdefault("name", path.stem)
    return resolve_config(raw, overrides, str(path))


def resolve_config(raw: dict, overrides: typing.Sequence[str], origin: str) -> Experiment:
    """`raw` (the config of `origin`, a file or a config given in Python) with the overrides
    applied, built strictly; see load_config for what a type switch drops."""
    raw = copy.deepcopy(raw)
    parsed = [parse_override(override) for override in overrides]
    set_keys = {".".join(keys) for keys, _ in parsed}
    defaults = config_to_dict(Experiment())
    switched = {  # sections whose type the overrides change
        ".".join(keys[:-1])
        for keys, value in parsed
        if ".".join(keys) in TYPE_KEYS and value != (_lookup(raw, keys) or _lookup(defaults, keys))
    }
    for keys, value in parsed:
        apply_override(raw, keys, value)

    def switched_away(key: str) -> bool:
        return key.rpartition(".")[0] in switched and key not in set_keys

    try:
        config, dropped = _build_dropping(raw, switched_away)
    except ConfigError as error:
        raise type(error)(error.path, f"{error.detail} (in {origin})") from None
    data = raw.get("data") if isinstance(raw.get("data"), dict) else {}
    ignored = [key for key in ("src_lang", "tgt_lang") if key in data]
    if config.data.directions is not None and ignored:
        log.warning(
            "notice: data.directions is set, so %s of %s %s ignored.",
            " and ".join(f"data.{key}" for key in ignored),
            origin,
            "is" if len(ignored) == 1 else "are",
        )
    if dropped:
        sections = {key.rpartition(".")[0] for key in dropped}
        types = ", ".join(
            f"{section}.type={_lookup(raw, [*section.split('.'), 'type'])}"
            for section in sorted(sections)
        )
        log.warning(
            "notice: dropped %s from %s: the types set with --set (%s) do not read %s.",
            ", ".join(dropped),
            origin,
            types,
            "it" if len(dropped) == 1 else "them",
        )
    return config


# The keys whose change makes others pointless: switching one drops what the new type ignores.
TYPE_KEYS = frozenset({"model.encoder.type", "model.decoder.type", "model.attention.type"})


def _lookup(raw: dict, keys: typing.Sequence[str]) -> Any:
    node: Any = raw
    for key in keys:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node


def _build_dropping(
    raw: dict, droppable: typing.Callable[[str], bool]
) -> tuple[Experiment, list[str]]:
    """Builds the Experiment, deleting from `raw` each key refused as pointless
    (UnusedKeyError) that `droppable` allows; returns it with the dotted keys dropped."""
    dropped = []
    while True:
        try:
            return build(Experiment, raw), dropped
        except UnusedKeyError as error:
            if not droppable(error.path):
                raise
            *sections, key = error.path.split(".")
            node = raw
            for section in sections:
                node = node[section]
            del node[key]
            dropped.append(error.path)


def config_to_dict(config: Experiment) -> dict:
    return dataclasses.asdict(config)


def config_from_dict(raw: dict) -> Experiment:
    return build(Experiment, raw)


# Keys added since checkpoints began storing every key, at the value that means what a
# checkpoint written before them meant: (section path, key, value).
ADDED_KEYS = ((("train", "adapters"), "ranks", {}),)


def checkpoint_config(raw: dict) -> Experiment:
    """The config stored in a checkpoint. Checkpoints written before pointless keys were
    refused may hold some; they never took effect, so they are put back to their defaults.
    One written before a key of ADDED_KEYS existed gets the value that keeps its meaning."""
    raw = copy.deepcopy(raw)
    for path, key, value in ADDED_KEYS:
        section = raw
        for name in path:
            section = section.get(name) if isinstance(section, dict) else None
        if isinstance(section, dict) and key not in section:
            section[key] = copy.deepcopy(value)
    return _build_dropping(raw, lambda key: True)[0]


def config_differences(old: dict, new: dict, ignore: frozenset[str] = frozenset()) -> list[str]:
    """'dotted.key: old -> new' for every leaf value that differs, except the ignored keys."""
    differences = []
    for key in sorted(set(_flatten(old)) | set(_flatten(new))):
        before, after = _flatten(old).get(key, "<absent>"), _flatten(new).get(key, "<absent>")
        if before != after and key not in ignore:
            differences.append(f"{key}: {before!r} -> {after!r}")
    return differences


def _flatten(raw: dict, prefix: str = "") -> dict:
    flat = {}
    for key, value in raw.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat
