"""The experiment config: typed sections (nmt/config/schema.py) read strictly from YAML
(nmt/config/loading.py). Import from here: `from nmt.config import Experiment, load_config`.
"""

from nmt.config.loading import (
    apply_override,
    build,
    checkpoint_config,
    config_differences,
    config_from_dict,
    config_to_dict,
    load_config,
    parse_override,
    resolve_config,
)
from nmt.config.schema import (
    AdapterConfig,
    AttentionConfig,
    CleanConfig,
    ConfigError,
    DataConfig,
    DecodeConfig,
    DecoderConfig,
    EncoderConfig,
    Experiment,
    FuzzyMatchConfig,
    ModelConfig,
    Splits,
    TokenizerConfig,
    TrainConfig,
    UnusedKeyError,
)

__all__ = [
    "AdapterConfig",
    "AttentionConfig",
    "CleanConfig",
    "ConfigError",
    "DataConfig",
    "DecodeConfig",
    "DecoderConfig",
    "EncoderConfig",
    "Experiment",
    "FuzzyMatchConfig",
    "ModelConfig",
    "Splits",
    "TokenizerConfig",
    "TrainConfig",
    "UnusedKeyError",
    "apply_override",
    "build",
    "checkpoint_config",
    "config_differences",
    "config_from_dict",
    "config_to_dict",
    "load_config",
    "parse_override",
    "resolve_config",
]
