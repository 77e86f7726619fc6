"""Every experiment setting as a frozen, typed dataclass, with the checks that need no file.

Each section checks its own values in `__post_init__` and raises ConfigError naming the key.
A key that the rest of the config makes pointless (`heads` of a single-head attention,
`min_lr` of the constant schedule) is refused too: every key either takes effect or is an
error. Reading YAML into these classes is nmt/config/loading.py's job.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from nmt.errors import UserError

Positions = Literal["sinusoidal", "learned", "relative", "rotary", "alibi"]
Activation = Literal["relu", "swish", "gelu"]  # a Transformer feed-forward block's
ABSOLUTE_POSITIONS = ("sinusoidal", "learned")  # the kinds added to the embeddings


class ConfigError(UserError):
    """A config value that cannot be used; `path` is its dotted key."""

    def __init__(self, path: str, message: str):
        self.path = path
        self.detail = message
        super().__init__(f"config key '{path}': {message}" if path else f"config: {message}")


class UnusedKeyError(ConfigError):
    """A key that the rest of the config leaves nothing to do."""


MIN_RATIO_SAMPLE = 50  # clean.ratio_sample's least: fewer pairs tell too little of a ratio


def _require(ok: bool, key: str, message: str) -> None:
    if not ok:
        raise ConfigError(key, message)


def _unused(config: Any, key: str, applies: bool, users: str, fix: str, section: str = "") -> None:
    """Refuses a key that would do nothing here. "Set" means "differs from the default", not
    "written in the YAML": checkpoints store every key of the resolved config, defaults too."""
    spec = next(spec for spec in dataclasses.fields(config) if spec.name == key)
    default = spec.default_factory() if spec.default is dataclasses.MISSING else spec.default
    if not (applies or getattr(config, key) == default):
        raise UnusedKeyError(
            join_key(section, key),
            f"{users}, so it would do nothing here. Remove it (default {_yaml(default)}) or {fix}",
        )


def _yaml(value: Any) -> str:
    if value is None or isinstance(value, bool):
        return "null" if value is None else str(value).lower()
    return str(value)


@dataclass(frozen=True)
class Splits:
    """Split names as they appear in file names or in the hub dataset (test: null = none)."""

    train: str = "train"
    valid: str = "valid"
    test: str | None = "test"


@dataclass(frozen=True)
class FuzzyMatchConfig:
    """Neural Fuzzy Repair (Bulte & Tezcan 2019; nmt/data/fuzzy_repair.py): a train pair
    whose source has a match in the rest of the train split scoring at least `threshold`
    (1 - word edit distance / longer length) trains, with probability `share`, on its source
    followed by a separator and the match's target; `--tm` then feeds matches the same way.
    `keep_originals`: such a pair also trains as it was (Bulte & Tezcan's training set, the
    original pairs and the augmented ones), so the model still reads every source alone."""

    threshold: float = 0.5
    share: float = 1.0
    keep_originals: bool = False

    def __post_init__(self) -> None:
        _require(0 < self.threshold <= 1, "threshold", f"must be in (0, 1], got {self.threshold}")
        _require(0 < self.share <= 1, "share", f"must be in (0, 1], got {self.share}")


@dataclass(frozen=True)
class DataConfig:
    """Where the corpus comes from: `path` (local files) wins over `demo` (the generated
    corpus), which wins over `hub_id`, so `--set data.path=DIR` can point any config or
    checkpoint at local files. `hub_splits` names the hub's splits when they differ from the
    local file names in `splits`; it and `hub_config` need `hub_id`.
    """

    src_lang: str = "de"
    tgt_lang: str = "en"
    path: str | None = None
    hub_id: str | None = None
    hub_config: str | None = None
    demo: bool = False
    splits: Splits = field(default_factory=Splits)
    hub_splits: Splits | None = None
    max_len: int = 100
    cache_dir: str | None = None
    # Large corpora (nmt/data/sources.py): tokenise the train split with datasets.map in `num_proc`
    # processes into an Arrow cache under RUN/cache (null: in memory), or stream it.
    num_proc: int | None = None
    streaming: bool = False
    # Several directions in one model (nmt/data/directions.py): ["de-en", "cs-en", ...]
    # instead of src_lang/tgt_lang; `max_pairs` caps a direction's train split at its first
    # N pairs; directions are drawn with probability proportional to size^(1/temperature).
    directions: list[str] | None = None
    max_pairs: dict[str, int] | None = None
    sampling_temperature: float = 5.0
    # More training pairs (nmt/data/splits.py::load_train_split): directories of the same
    # layout whose train split follows this corpus's, e.g. one that `nmt distill` wrote.
    extra_train: list[str] | None = None
    # Where a model that writes several languages reads the tag naming the one to write
    # (nmt/data/tokenizer.py): in front of the source, or as the decoder's first input.
    tags: Literal["source", "decoder_bos"] = "source"
    # Clean the train split as it is read, with the filters of the `clean` section
    # (nmt/data/cleaning.py; `nmt clean` writes a cleaned copy instead)
    clean: bool = False
    # A share of the training pairs with placeholder tags around phrases that translate each
    # other (nmt/data/markup_augment.py), so the model learns to carry tags itself
    markup_augment: float = 0.0
    # Train on fuzzy matches from the train split itself, the best one's target appended
    # to the source (nmt/data/fuzzy_repair.py); null: off
    fuzzy_matches: FuzzyMatchConfig | None = None

    def __post_init__(self) -> None:
        _require(
            self.directions is not None or self.src_lang != self.tgt_lang,
            "tgt_lang",
            "must differ from src_lang",
        )
        self._check_directions()
        self._check_extra_train()
        _require(self.max_len > 0, "max_len", f"must be positive, got {self.max_len}")
        _require(
            0 <= self.markup_augment < 1,
            "markup_augment",
            f"must be a share in [0, 1), got {self.markup_augment}",
        )
        _require(
            not (self.markup_augment and (self.streaming or self.num_proc)),
            "markup_augment",
            "tags the train split in memory: set data.streaming: false and data.num_proc: null",
        )
        _require(
            not (self.fuzzy_matches and (self.streaming or self.num_proc)),
            "fuzzy_matches",
            "searches the train split in memory: set data.streaming: false and data.num_proc: null",
        )
        _require(self.num_proc is None or self.num_proc > 0, "num_proc", "must be positive or null")
        _require(
            not (self.streaming and self.num_proc),
            "num_proc",
            "must be null with data.streaming: true (a stream is tokenised as it is read)",
        )
        for key in ("hub_config", "hub_splits"):
            users = "only a hub dataset uses it, and hub_id is null"
            _unused(self, key, bool(self.hub_id), users, "set hub_id")
        users = "only a model that writes several languages reads tags, and this one writes one"
        several = len(self.target_languages) > 1
        _unused(self, "tags", several, users, "list directions into several languages")
        demo = "data.demo: true reads the built-in corpus instead of the hub"
        _unused(self, "hub_id", not self.demo, demo, "set demo: false")

    def _check_directions(self) -> None:
        if self.directions is not None:
            _require(bool(self.directions), "directions", "needs at least one, e.g. [de-en]")
            for index, direction in enumerate(self.directions):
                source, dash, target = direction.partition("-")
                _require(
                    bool(dash and source and target and "-" not in target and source != target),
                    f"directions[{index}]",
                    f"expected SOURCE-TARGET with two different language codes, e.g. de-en; "
                    f"got {direction!r}",
                )
            repeated = sorted({d for d in self.directions if self.directions.count(d) > 1})
            _require(not repeated, "directions", f"lists {', '.join(repeated)} twice")
        names = [f"{source}-{target}" for source, target in self.pairs]
        for direction, limit in (self.max_pairs or {}).items():
            _require(
                direction in names,
                f"max_pairs.{direction}",
                f"names no direction of this corpus ({', '.join(names)})",
            )
            _require(limit > 0, f"max_pairs.{direction}", f"must be positive, got {limit}")
        _require(self.sampling_temperature > 0, "sampling_temperature", "must be positive")
        users = "only several directions are sampled, and data.directions has fewer"
        _unused(self, "sampling_temperature", len(names) > 1, users, "list more directions")
        in_memory = not (self.streaming or self.num_proc)
        _require(
            in_memory or (len(names) == 1 and not self.max_pairs),
            "directions" if len(names) > 1 else "max_pairs",
            "works on the train split in memory only; set data.streaming: false and "
            "data.num_proc: null",
        )

    def _check_extra_train(self) -> None:
        if self.extra_train is None:
            return
        _require(bool(self.extra_train), "extra_train", "needs a directory, e.g. [distilled]")
        for index, directory in enumerate(self.extra_train):
            _require(bool(directory), f"extra_train[{index}]", "must name a directory")
        repeated = sorted({d for d in self.extra_train if self.extra_train.count(d) > 1})
        _require(not repeated, "extra_train", f"lists {', '.join(repeated)} twice")
        _require(
            not (self.streaming or self.num_proc),
            "extra_train",
            "works on the train split in memory only; set data.streaming: false and "
            "data.num_proc: null",
        )

    @property
    def pairs(self) -> list[tuple[str, str]]:
        """(source, target) language of each direction, in the order given."""
        if self.directions is None:
            return [(self.src_lang, self.tgt_lang)]
        return [tuple(direction.split("-")) for direction in self.directions]  # type: ignore[misc]

    @property
    def target_languages(self) -> list[str]:
        """The languages the model writes, sorted."""
        return sorted({target for _, target in self.pairs})

    def direction(self, source: str, target: str) -> DataConfig:
        """This corpus read in one direction, as a one-pair config reads it."""
        return dataclasses.replace(
            self,
            src_lang=source,
            tgt_lang=target,
            directions=None,
            max_pairs=None,
            tags="source",  # one direction writes one language: no tags
        )


@dataclass(frozen=True)
class TokenizerConfig:
    """SentencePiece: trained on the train split, or an existing joint `model` file (which
    leaves nothing for `joint`, `type`, `vocab_size` and `character_coverage` to do).

    `sample_alpha` turns on subword regularisation: each training pair is segmented afresh
    every time it is drawn, by SentencePiece's own sampling (BPE-dropout with this
    probability for a BPE model, Provilkov et al. 2020; lattice sampling with this smoothing
    for a unigram model, Kudo 2018). Validation, test and translation keep the best
    segmentation. null: off."""

    model: str | None = None
    joint: bool = True
    type: Literal["bpe", "unigram"] = "bpe"
    vocab_size: int = 8000
    character_coverage: float = 1.0
    sample_alpha: float | None = None

    def __post_init__(self) -> None:
        _require(self.vocab_size >= 16, "vocab_size", f"must be at least 16, got {self.vocab_size}")
        _require(0 < self.character_coverage <= 1, "character_coverage", "must be in (0, 1]")
        _require(
            self.sample_alpha is None or 0 < self.sample_alpha <= 1,
            "sample_alpha",
            f"must be in (0, 1] (null: no sampling), got {self.sample_alpha}",
        )
        for key in ("joint", "type", "vocab_size", "character_coverage"):
            users = "only training SentencePiece uses it, not a given tokenizer.model"
            _unused(self, key, self.model is None, users, "set model: null")


@dataclass(frozen=True)
class EncoderConfig:
    """The source side. `emb_dim` and `dropout` apply to every type; the rest depends on it:

    | type                 | `layers` counts                      | also reads                     |
    |----------------------|--------------------------------------|--------------------------------|
    | birnn                | BiRNN layers                         | rnn, hidden_dim                |
    | self_attention       | self-attention layers                | heads, ff_dim                  |
    | birnn_self_attention | self-attention layers on one BiRNN   | rnn, hidden_dim, heads, ff_dim |

    `hidden_dim` is per direction, so a BiRNN's annotations have 2 * hidden_dim features;
    without one they have emb_dim (`output_dim`). `norm` places the self-attention layers'
    layer normalisation: before each sub-layer (pre) or after its residual sum (post).

    `positions` (nmt/model/positions.py): null is the type's own, sinusoidal for
    self_attention and none for the types with a BiRNN, which orders the words itself. Over
    a BiRNN only the kinds inside the attention (relative, rotary, alibi) apply: positions
    added to the embeddings would enter below the BiRNN.

    `activation` (the feed-forward blocks' nonlinearity: relu as in Vaswani et al., swish
    or gelu) and `attention_bias` (biases on the self-attention's query, key, value and
    output projections) default to the paper's Transformer; Marian's models (OPUS-MT) use
    swish and biases, so an imported one sets them (`nmt import`).
    """

    type: Literal["birnn", "self_attention", "birnn_self_attention"] = "birnn"
    rnn: Literal["gru", "lstm"] = "gru"
    emb_dim: int = 256
    hidden_dim: int = 256
    layers: int = 1
    heads: int = 4
    ff_dim: int = 1024
    norm: Literal["pre", "post"] = "pre"
    activation: Activation = "relu"
    attention_bias: bool = False
    dropout: float = 0.2
    positions: Positions | None = None
    max_positions: int = 1024
    max_relative_position: int = 16

    def __post_init__(self) -> None:
        _positive(self, "emb_dim", "hidden_dim", "layers", "heads", "ff_dim")
        _probability(self, "dropout")
        recurrent, attending = self.type != "self_attention", self.type != "birnn"
        for key in ("rnn", "hidden_dim"):
            users = f"only types birnn and birnn_self_attention use it, not {self.type!r}"
            _unused(self, key, recurrent, users, "change the type")
        for key in ("heads", "ff_dim", "norm", "activation", "attention_bias", "positions"):
            users = f"only types self_attention and birnn_self_attention use it, not {self.type!r}"
            _unused(self, key, attending, users, "change the type")
        if attending:
            _require(
                self.output_dim % self.heads == 0,
                "heads",
                f"must divide the self-attention size {self.output_dim}, got {self.heads}",
            )
        _require(
            self.type != "birnn_self_attention" or self.positions not in ABSOLUTE_POSITIONS,
            "positions",
            f"{self.positions!r} adds positions to the embeddings, below the BiRNN, which "
            "orders the words already; over a BiRNN choose relative, rotary or alibi, which "
            "act in its self-attention layers, or leave it null",
        )
        _check_positions(self, self.position_kind, self.output_dim)

    @property
    def position_kind(self) -> Positions | None:
        """The positions the encoder uses (None: none, the BiRNN orders the words)."""
        if self.positions is None and self.type == "self_attention":
            return "sinusoidal"
        return self.positions

    @property
    def output_dim(self) -> int:
        """Size of the annotations h_j; the encoder is built to this size."""
        return self.emb_dim if self.type == "self_attention" else 2 * self.hidden_dim

    def resized_to(self, size: int) -> str:
        """', or <the encoder key that gives states of `size`>', or '' if none can."""
        if self.type == "self_attention":
            return f", or model.encoder.emb_dim: {size}"
        if size % 2:
            return ""
        return f", or model.encoder.hidden_dim: {size // 2} (a BiRNN's states are 2 × hidden_dim)"


@dataclass(frozen=True)
class AttentionConfig:
    """Decoder attention. `attn_dim`: hidden size of the additive scorer, the multi-head size
    (split over `heads`), and of the local window's position predictor. `scaled`: divide dot
    and general scores by sqrt(d) (multihead always is, additive never). `kv`: keys and values
    both the encoder states (shared) or distinct learned projections of them (separate).
    `dropout`: on the attention weights. `window`: local-p attention width D (null: global).
    `normaliser`: scores to weights (nmt/model/normalisers.py): softmax, sparsemax, entmax15
    (sparse: exact zeros), or hard (one position; trained by straight-through Gumbel-softmax
    at a temperature falling from `temperature_start` to `temperature_end` over
    `temperature_steps` updates). `coverage` (nmt/model/coverage.py): how much attention each
    source word has had so far enters the additive score, as a plain running sum (vector) or
    divided by a predicted fertility (linguistic).
    """

    type: Literal["additive", "dot", "general", "multihead"] = "additive"
    attn_dim: int = 512
    heads: int = 4
    scaled: bool = False
    kv: Literal["shared", "separate"] = "shared"
    dropout: float = 0.0
    window: int | None = None
    normaliser: Literal["softmax", "sparsemax", "entmax15", "hard"] = "softmax"
    temperature_start: float = 1.0
    temperature_end: float = 0.5
    temperature_steps: int = 10_000
    coverage: Literal["none", "vector", "linguistic"] = "none"

    def __post_init__(self) -> None:
        _positive(self, "attn_dim", "heads", "temperature_steps")
        _require(
            self.coverage == "none" or self.type == "additive",
            "coverage",
            f"enters the additive score v^T tanh(W s + U h_j + w c_j); {self.type!r} scores "
            "have no place for it. Set type: additive, or coverage: none (the coverage loss "
            "and penalty, train.coverage_loss and decode.coverage_penalty, work with any type)",
        )
        _probability(self, "dropout")
        _require(
            0 < self.temperature_end <= self.temperature_start,
            "temperature_end",
            f"must be in (0, temperature_start={self.temperature_start}], got "
            f"{self.temperature_end}",
        )
        for key in ("temperature_start", "temperature_end", "temperature_steps"):
            users = f"only normaliser hard uses it, not {self.normaliser!r}"
            _unused(self, key, self.normaliser == "hard", users, "set normaliser: hard")
        _require(self.window is None or self.window > 0, "window", "must be positive or null")
        multihead, dot = self.type == "multihead", self.type in ("dot", "general")
        users = f"only type multihead uses it, not {self.type!r}"
        _unused(self, "heads", multihead, users, "set type: multihead")
        users = f"only types dot and general use it (multihead is always scaled), not {self.type!r}"
        _unused(self, "scaled", dot, users, "set type: dot or general")
        users = f"only types additive and multihead, or a window, use it, not {self.type!r} alone"
        _unused(self, "attn_dim", not dot or self.window is not None, users, "set a window")
        if multihead:
            _require(
                self.attn_dim % self.heads == 0,
                "heads",
                f"must divide attn_dim {self.attn_dim}, got {self.heads}",
            )


@dataclass(frozen=True)
class DecoderConfig:
    """The target side. `emb_dim`, `dropout` and `tie_embeddings` (output projection = target
    embeddings) apply to both types; the rest depends on it:

    | type        | what it is                                   | also reads                  |
    |-------------|----------------------------------------------|-----------------------------|
    | rnnsearch   | GRU, s_{i-1} attends, deep output            | hidden_dim, output, out_dim |
    | transformer | `layers` of masked self-attention, attention | layers, heads, ff_dim, norm |
    |             | over the source, feed-forward; width emb_dim |                             |

    A Transformer's `dropout` acts on its residual paths and feed-forward blocks; its
    attention weights take `model.attention.dropout` (self- and cross-attention alike).
    `positions` (nmt/model/positions.py): sinusoidal, learned (`max_positions` of them),
    relative (distances clipped at `max_relative_position`), rotary or alibi. `activation`
    and `attention_bias` as the encoder's; the bias covers the attention over the source
    too, which then must be multihead.
    """

    type: Literal["rnnsearch", "transformer"] = "rnnsearch"
    emb_dim: int = 256
    hidden_dim: int = 512
    output: Literal["maxout", "tanh"] = "maxout"
    out_dim: int = 256
    layers: int = 6
    heads: int = 4
    ff_dim: int = 1024
    norm: Literal["pre", "post"] = "pre"
    activation: Activation = "relu"
    attention_bias: bool = False
    dropout: float = 0.2
    tie_embeddings: bool = False
    positions: Positions = "sinusoidal"
    max_positions: int = 1024
    max_relative_position: int = 16

    def __post_init__(self) -> None:
        _positive(self, "emb_dim", "hidden_dim", "out_dim", "layers", "heads", "ff_dim")
        _probability(self, "dropout")
        rnn = self.type == "rnnsearch"
        for key in ("hidden_dim", "output", "out_dim"):
            users = f"only type rnnsearch uses it, not {self.type!r}"
            _unused(self, key, rnn, users, "set type: rnnsearch")
        for key in (
            "layers",
            "heads",
            "ff_dim",
            "norm",
            "activation",
            "attention_bias",
            "positions",
        ):
            users = f"only type transformer uses it, not {self.type!r}"
            _unused(self, key, not rnn, users, "set type: transformer")
        _check_positions(self, None if rnn else self.positions, self.emb_dim)
        _require(
            not (rnn and self.tie_embeddings) or self.out_dim == self.emb_dim,
            "tie_embeddings",
            f"needs out_dim == emb_dim (got {self.out_dim} and {self.emb_dim})",
        )
        _require(
            rnn or self.emb_dim % self.heads == 0,
            "heads",
            f"must divide the Transformer width emb_dim {self.emb_dim}, got {self.heads}",
        )

    @property
    def state_dim(self) -> int:
        """Size of the decoder state that queries the attention."""
        return getattr(self, self.state_key)

    @property
    def state_key(self) -> str:
        """The key that sizes the decoder state."""
        return "hidden_dim" if self.type == "rnnsearch" else "emb_dim"


@dataclass(frozen=True)
class ModelConfig:
    """`attention` is the decoder's attention over the source (a Transformer's cross-attention).
    `share_embeddings`: source and target embeddings are one matrix, which needs a joint
    SentencePiece model; with decoder.tie_embeddings the output projection is it too.
    `copy`: a pointer-generator (nmt/model/copy.py) that mixes copying source pieces into the
    output; a Transformer copies with the head average of decoder layer `copy_layer` (1 to
    layers, null: the last)."""

    encoder: EncoderConfig = field(default_factory=EncoderConfig)
    decoder: DecoderConfig = field(default_factory=DecoderConfig)
    attention: AttentionConfig = field(default_factory=AttentionConfig)
    share_embeddings: bool = False
    copy: bool = False
    copy_layer: int | None = None

    @property
    def width(self) -> int:
        """The width of the target embeddings, which sizes most of the model's matrix
        products (and so whether bf16 pays: nmt/model/device.py)."""
        return self.decoder.emb_dim

    def __post_init__(self) -> None:
        encoder, decoder = self.encoder, self.decoder
        query, memory = decoder.state_dim, encoder.output_dim
        _require(
            not self.share_embeddings or encoder.emb_dim == decoder.emb_dim,
            "share_embeddings",
            f"needs encoder.emb_dim == decoder.emb_dim (got {encoder.emb_dim} and "
            f"{decoder.emb_dim})",
        )
        _require(
            decoder.type != "transformer" or memory == query,
            "decoder.emb_dim",
            f"a Transformer decoder adds the attention's context to its states, so its width "
            f"must equal the encoder's state size {memory}, got {query}. Set "
            f"model.decoder.emb_dim: {memory}{encoder.resized_to(query)}",
        )
        _unused(
            self,
            "copy_layer",
            self.copy and decoder.type == "transformer",
            "only a copy model with a Transformer decoder copies with one of its layers",
            "set model.copy: true with model.decoder.type: transformer",
        )
        _require(
            self.copy_layer is None or 1 <= self.copy_layer <= decoder.layers,
            "copy_layer",
            f"must be a decoder layer, 1 to {decoder.layers} (null: the last), got "
            f"{self.copy_layer}",
        )
        _require(
            self.attention.coverage == "none" or decoder.type == "rnnsearch",
            "attention.coverage",
            "makes each step's attention depend on the attention of the steps before, and a "
            "Transformer decoder trains all target positions at once. Use decoder type "
            "rnnsearch, or coverage: none (train.coverage_loss and decode.coverage_penalty "
            "work with a Transformer)",
        )
        _require(
            not decoder.attention_bias or self.attention.type == "multihead",
            "decoder.attention_bias",
            f"puts biases on the projections of the attention over the source too, and a "
            f"{self.attention.type!r} attention has none of those. Set model.attention.type: "
            "multihead, or attention_bias: false",
        )
        if self.attention.type == "dot" and self.attention.kv == "shared":
            _require(
                query == memory,
                "attention.type",
                f"dot scores with shared keys need the decoder state (model.decoder."
                f"{decoder.state_key}: {query}) as wide as the encoder's states ({memory}). Set "
                f"model.decoder.{decoder.state_key}: {memory}{encoder.resized_to(query)}, or "
                "model.attention.kv: separate, or model.attention.type: general",
            )


AdapterTarget = Literal["attention", "feed_forward", "embeddings", "output", "rnn_inputs"]


WIDE_EMBEDDINGS = {"embeddings": 64, "output": 64}  # train.adapters.ranks' default


@dataclass(frozen=True)
class AdapterConfig:
    """Adapters trained on a frozen base (train.init_from): LoRA on the weight matrices of
    `targets` (rank, alpha, dropout), or a bottleneck of `size` units after each Transformer
    layer (nmt/model/adapters.py). Defaults: docs/results.md, "Adapters"."""

    type: Literal["lora", "bottleneck"] = "lora"
    rank: int = 4
    alpha: float = 8.0
    dropout: float = 0.0
    # the embeddings too: a new language's pieces have embeddings its base never trained
    targets: list[AdapterTarget] = field(
        default_factory=lambda: ["attention", "feed_forward", "embeddings", "output"]
    )
    # another rank for some of the targets, at the same scale alpha / rank: the embeddings'
    # update wider than the layers' (8.8% of the recipe Transformer's parameters in all)
    ranks: dict[str, int] = field(default_factory=lambda: dict(WIDE_EMBEDDINGS))
    size: int = 64

    def __post_init__(self) -> None:
        _positive(self, "rank", "size")
        _require(self.alpha > 0, "alpha", f"must be positive, got {self.alpha}")
        _probability(self, "dropout")
        _require(bool(self.targets), "targets", "must name at least one kind of weight")
        for target, rank in self.ranks.items():
            _require(
                target in get_args(AdapterTarget),
                f"ranks.{target}",
                f"is no kind of weight: choose among {', '.join(get_args(AdapterTarget))}",
            )
            _require(
                target in self.targets or self.ranks == WIDE_EMBEDDINGS,
                f"ranks.{target}",
                f"names no target of train.adapters.targets ({', '.join(self.targets)})",
            )
            _require(
                isinstance(rank, int) and rank > 0,
                f"ranks.{target}",
                f"must be a positive integer, got {rank}",
            )
        lora = self.type == "lora"
        for key in ("rank", "alpha", "dropout", "targets", "ranks"):
            users = "only type lora uses it, not bottleneck"
            _unused(self, key, lora, users, "set type: lora")
        users = "only type bottleneck uses it, not lora"
        _unused(self, "size", not lora, users, "set type: bottleneck")


@dataclass(frozen=True)
class TrainConfig:
    seed: int = 42
    max_steps: int = 100_000
    max_minutes: float | None = None
    batch_tokens: int = 1000
    lr: float = 1e-3
    label_smoothing: float = 0.1
    clip_norm: float = 1.0
    # Schedule, accumulation, early stopping, checkpoints, device: see nmt/train/.
    schedule: Literal["constant", "plateau", "inverse_sqrt", "cosine"] = "constant"
    warmup_steps: int = 0
    min_lr: float = 0.0
    plateau_factor: float = 0.5
    plateau_patience: int = 3
    accum_steps: int = 1
    patience: int | None = None
    best_metric: Literal["bleu", "loss"] = "bleu"  # with several directions: their mean
    keep_last: int = 0
    device: Literal["auto", "cpu", "cuda"] = "auto"
    # auto: bf16 where the device multiplies it natively and the model is >= 128 wide
    # (narrower models gain nothing), else fp32 (nmt/model/device.py, docs/results.md)
    precision: Literal["auto", "fp32", "bf16", "fp16"] = "auto"
    tensorboard: bool = False
    log_every: int = 50
    valid_every: int = 500
    valid_max_sentences: int | None = None
    threads: int | None = None
    max_bad_steps: int = 10
    ema_decay: float | None = None  # e.g. 0.999: validate, keep and test a moving average
    coverage_loss: float = 0.0  # weight of See et al.'s sum of min(attention, coverage)
    init_from: str | None = None  # a checkpoint whose weights and tokenizer training starts from
    adapters: AdapterConfig | None = None  # train adapters alone on init_from's frozen model
    # P > 0: from update online_backtranslation_after on, a share P of each batch's pairs
    # trains on the model's own translation of the target into another of its languages
    # (nmt/train/backtranslation.py)
    online_backtranslation: float = 0.0
    online_backtranslation_after: int = 0

    def __post_init__(self) -> None:
        _positive(self, "max_steps", "batch_tokens", "log_every", "valid_every", "max_bad_steps")
        _require(
            0 <= self.online_backtranslation <= 1,
            "online_backtranslation",
            f"must be a share of each batch in [0, 1] (0: off), got {self.online_backtranslation}",
        )
        _require(
            self.online_backtranslation_after >= 0,
            "online_backtranslation_after",
            f"must be >= 0, got {self.online_backtranslation_after}",
        )
        users = "only online back-translation starts at it, and online_backtranslation is 0"
        _unused(
            self,
            "online_backtranslation_after",
            self.online_backtranslation > 0,
            users,
            "set online_backtranslation",
        )
        _require(self.lr > 0, "lr", f"must be positive, got {self.lr}")
        self._check_schedule_and_checkpoints()
        _require(self.max_minutes is None or self.max_minutes > 0, "max_minutes", "must be > 0")
        _require(self.clip_norm >= 0, "clip_norm", "must be >= 0 (0 turns clipping off)")
        _probability(self, "label_smoothing")
        _require(self.threads is None or self.threads > 0, "threads", "must be positive")
        _require(
            self.coverage_loss >= 0,
            "coverage_loss",
            f"must be >= 0 (0: none), got {self.coverage_loss}",
        )
        _require(
            self.ema_decay is None or 0 < self.ema_decay < 1,
            "ema_decay",
            f"must be in (0, 1), e.g. 0.999, or null for no average; got {self.ema_decay}",
        )
        _require(
            self.adapters is None or self.init_from is not None,
            "adapters",
            "trains adapters on a frozen base model, and train.init_from names none; set it "
            "to the base's checkpoint (a run directory or .pt file), or remove adapters",
        )
        _require(
            self.valid_max_sentences is None or self.valid_max_sentences > 0,
            "valid_max_sentences",
            "must be positive (null validates on the whole split)",
        )

    def _check_schedule_and_checkpoints(self) -> None:
        """The schedule keys (lr_at in nmt/train/optim.py): warmup_steps applies to every
        schedule, min_lr to all but constant, plateau_* only to plateau."""
        _positive(self, "plateau_patience", "accum_steps")
        _require(self.warmup_steps >= 0, "warmup_steps", "must be >= 0 (0: no warmup)")
        _require(0 <= self.min_lr <= self.lr, "min_lr", f"must be in [0, lr={self.lr}]")
        _require(0 < self.plateau_factor < 1, "plateau_factor", "must be in (0, 1)")
        users = f"only schedules plateau, inverse_sqrt and cosine use it, not {self.schedule!r}"
        _unused(self, "min_lr", self.schedule != "constant", users, "choose one of them")
        for key in ("plateau_factor", "plateau_patience"):
            users = f"only schedule plateau uses it, not {self.schedule!r}"
            _unused(self, key, self.schedule == "plateau", users, "set schedule: plateau")
        _require(self.patience is None or self.patience > 0, "patience", "must be > 0 or null")
        _require(self.keep_last >= 0, "keep_last", "must be >= 0 (0: no step checkpoints)")


@dataclass(frozen=True)
class DecodeConfig:
    """Defaults of `nmt translate` and `nmt eval`; validation during training is greedy.

    Keys of a mode these settings do not select (temperature under sample: false, alpha under
    beam: 1) are not refused: a command-line option (`--sample`, `--beam`) selects that mode.
    """

    batch_size: int = 64
    max_len_ratio: float = 2.0
    max_len_extra: int = 10
    beam: int = 5
    alpha: float = 0.6  # length penalty ((5 + len) / 6) ** alpha; 0: rank by raw score
    nbest: int = 1  # hypotheses per input (samples per input with sample: true)
    sample: bool = False
    temperature: float = 1.0
    top_k: int = 0  # 0: no limit
    top_p: float = 1.0
    seed: int = 0
    max_src_len: int = 250
    no_repeat_ngram: int = 0  # n > 0: no translation repeats an n-gram (0: off)
    max_constraints: int = 16  # phrases one sentence may include or exclude (search cost)
    coverage_penalty: float = 0.0  # GNMT's beta: rank by + beta * sum_j log min(attention, 1)
    # K > 0: write only target pieces of the vocabulary shortlist beside the checkpoint (its
    # K best per source piece, and the frequent ones: nmt/translate/shortlist.py); 0: off
    shortlist: int = 0
    # a model that writes several languages writes only pieces its training targets in the
    # requested language used (nmt/translate/decoding.py::output_columns)
    restrict_to_target_language: bool = False
    # what search computes in: bf16 weights and activations (scores summed in float32),
    # auto: as train.precision's (nmt/translate/loading.py)
    precision: Literal["auto", "fp32", "bf16"] = "fp32"
    # Pivoting (nmt/translate/pivot.py): translate into `through` first, then from it into
    # the target; a direction a multilingual model never trained goes through the language
    # that connects it (zero_shot: pivot), or directly (direct); `pivot_candidates` k: the
    # first leg's k best each give k, ranked by the sum of the two legs' search scores
    through: str | None = None
    zero_shot: Literal["pivot", "direct"] = "pivot"
    pivot_candidates: int = 1

    def __post_init__(self) -> None:
        _positive(
            self,
            "batch_size",
            "beam",
            "nbest",
            "temperature",
            "max_src_len",
            "max_constraints",
            "pivot_candidates",
        )
        _require(
            self.zero_shot in ("pivot", "direct"),
            "zero_shot",
            f"must be pivot or direct, got {self.zero_shot!r}",
        )
        _require(self.shortlist >= 0, "shortlist", f"must be >= 0 (0: off), got {self.shortlist}")
        _require(
            self.no_repeat_ngram >= 0,
            "no_repeat_ngram",
            f"must be >= 0 (0: no blocking), got {self.no_repeat_ngram}",
        )
        _require(self.max_len_ratio > 0, "max_len_ratio", "must be positive")
        _require(self.max_len_extra >= 0, "max_len_extra", "must be >= 0")
        _require(self.alpha >= 0, "alpha", f"must be >= 0, got {self.alpha}")
        _require(
            self.coverage_penalty >= 0,
            "coverage_penalty",
            f"must be >= 0 (0: none), got {self.coverage_penalty}",
        )
        _require(
            self.sample or self.nbest <= self.beam,
            "nbest",
            f"must be <= beam ({self.beam}) unless sampling, got {self.nbest}",
        )
        _require(self.top_k >= 0, "top_k", f"must be >= 0 (0: no limit), got {self.top_k}")
        _require(
            self.precision in ("auto", "fp32", "bf16"),
            "precision",
            f"must be auto, fp32 or bf16 (what search computes in), got {self.precision!r}",
        )
        _require(0 < self.top_p <= 1, "top_p", f"must be in (0, 1], got {self.top_p}")

    def greedy(self) -> DecodeConfig:
        """These settings with beam search and sampling off, for fast validation; and
        without the shortlist, which `nmt shortlist` learns only after training."""
        return dataclasses.replace(self, beam=1, nbest=1, sample=False, shortlist=0)


@dataclass(frozen=True)
class CleanConfig:
    """What `nmt clean` (and `data.clean: true` in training) removes from a train split
    (nmt/data/cleaning.py), each filter in the order it judges; null or false turns one off.
    Thresholds are documented, with the measurements behind them, in docs/cleaning.md.
    Before the filters judge a pair, two repairs (nmt/data/repairs.py)."""

    # mojibake ("MÃ¤nner": UTF-8 read as Latin-1 or Windows-1252) decoded again by ftfy
    fix_text: bool = True
    # HTML tags, character references and URLs: strip (keep the text between them), remove
    # (the pair, as the markup filter), or null (neither: the filters judge them as they are)
    markup: Literal["strip", "remove"] | None = "strip"
    empty: bool = True  # a side empty or only whitespace
    control_characters: bool = True  # control, private-use, unassigned characters, U+FFFD
    max_words: int | None = 250  # words on either side
    max_chars: int | None = 2000  # characters on either side
    # letters among the non-space characters of either side, URLs counted as non-letters
    min_letter_ratio: float | None = 0.5
    # a pair whose log character-length ratio lies this many robust standard deviations
    # (1.4826 x the median absolute deviation) from the corpus's median: measured on the
    # first `ratio_sample` pairs, so it suits any language pair (truncated sides, merges)
    max_ratio_deviation: float | None = 4.0
    ratio_sample: int = 10_000
    # the share of the target's character trigrams found in the source; above it, a copy
    max_copy_overlap: float | None = 0.8
    # a side whose language is not among py3langid's `language_rank` most likely (of 97)
    language_rank: int | None = 2
    # a pair whose source or target is also in the valid or test split (case, punctuation
    # and whitespace folded): a score is never inflated by sentences trained on
    held_out: bool = True
    duplicates: bool = True  # a pair seen before, exactly
    near_duplicates: bool = True  # a pair seen before once case, punctuation, spaces fold

    def __post_init__(self) -> None:
        _require(
            self.ratio_sample >= MIN_RATIO_SAMPLE,
            "ratio_sample",
            f"must be at least {MIN_RATIO_SAMPLE} (fewer pairs tell too little of the corpus's "
            f"length ratio to judge it), got {self.ratio_sample}",
        )
        for key in ("max_words", "max_chars", "language_rank"):
            value = getattr(self, key)
            _require(value is None or value > 0, key, f"must be positive or null, got {value}")
        deviation = self.max_ratio_deviation
        _require(deviation is None or deviation > 0, "max_ratio_deviation", "must be > 0 or null")
        for key in ("max_copy_overlap", "min_letter_ratio"):
            value = getattr(self, key)
            _require(
                value is None or 0 < value <= 1, key, f"must be in (0, 1] or null, got {value}"
            )


@dataclass(frozen=True)
class Experiment:
    name: str = "experiment"
    data: DataConfig = field(default_factory=DataConfig)
    tokenizer: TokenizerConfig = field(default_factory=TokenizerConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    decode: DecodeConfig = field(default_factory=DecodeConfig)
    clean: CleanConfig = field(default_factory=CleanConfig)

    def __post_init__(self) -> None:
        data, tokenizer = self.data, self.tokenizer
        users = "only training SentencePiece and writing the demo corpus use it, and neither runs"
        used = tokenizer.model is None or (data.demo and not data.path)
        _unused(data, "cache_dir", used, users, "set tokenizer.model: null", section="data")
        users = "only the in-memory train split samples segmentations, not a streamed or cached one"
        _unused(
            tokenizer,
            "sample_alpha",
            not (data.streaming or data.num_proc),
            users,
            "set data.streaming: false and data.num_proc: null",
            section="tokenizer",
        )
        _require(
            tokenizer.joint or len(data.target_languages) == 1,
            "tokenizer.joint",
            f"must be true: a model that writes several languages "
            f"({', '.join(data.target_languages)}) reads a tag naming the one to write, and "
            "tags live in one joint vocabulary",
        )
        _require(
            self.train.online_backtranslation == 0 or len(data.target_languages) > 1,
            "train.online_backtranslation",
            "translates a target into another language the model writes, and this model "
            f"writes {data.target_languages[0]} only; list directions into several languages "
            "in data.directions, or set it to 0",
        )
        _require(
            tokenizer.sample_alpha is None or len(data.pairs) == 1,
            "tokenizer.sample_alpha",
            "samples segmentations for one direction only; set it to null with several",
        )
        _require(
            tokenizer.joint or not self.model.share_embeddings,
            "model.share_embeddings",
            "needs one vocabulary for both languages; set tokenizer.joint: true (or give a "
            "joint tokenizer.model), or share_embeddings: false",
        )
        _require(
            self.decode.through is None,
            "decode.through",
            "pivots every line, and a model pivots only through a language it writes "
            f"({', '.join(data.target_languages)}), which is the target of a direction it "
            "trains: kept in the checkpoints, it would send that direction through its own "
            "target. Remove it and pass --through to nmt translate, eval or score (a direction "
            "the model never trained goes through a pivot already, decode.zero_shot: pivot)",
        )
        self.check_decode(self.decode)

    def check_decode(self, decode: DecodeConfig) -> None:
        """Refuses decode settings (this config's, or a command's) that ask of this model
        what it cannot do, naming the key and the flag that sets it."""
        if not decode.restrict_to_target_language:
            return
        key, flag = "decode.restrict_to_target_language", "--restrict-to-target-language"
        languages = self.data.target_languages
        _require(
            len(languages) > 1,
            key,
            f"({flag}) keeps a model that writes several languages to the one asked for, and "
            f"this one writes {languages[0]} only; set it to false (--any-target-piece)",
        )
        _require(
            not self.model.copy,
            key,
            f"({flag}): a model that copies (model.copy) writes its source's pieces too, "
            "which no list of one language's pieces names; set it to false "
            "(--any-target-piece)",
        )


def _check_positions(config: Any, kind: str | None, width: int) -> None:
    """The keys of the positions a stack of `width` features uses (`kind`; None: none)."""
    _positive(config, "max_positions", "max_relative_position")
    users = f"only positions: learned uses it, not {kind or 'none'}"
    _unused(config, "max_positions", kind == "learned", users, "set positions: learned")
    users = f"only positions: relative uses it, not {kind or 'none'}"
    _unused(config, "max_relative_position", kind == "relative", users, "set positions: relative")
    head = width // config.heads
    _require(
        kind != "rotary" or head % 2 == 0,
        "positions",
        f"rotary turns pairs of each head's features, so the head size (width {width} / heads "
        f"{config.heads} = {head}) must be even; change heads",
    )


def _positive(config: Any, *names: str) -> None:
    for name in names:
        value = getattr(config, name)
        _require(value > 0, name, f"must be positive, got {value}")


def _probability(config: Any, name: str) -> None:
    value = getattr(config, name)
    _require(0 <= value < 1, name, f"must be in [0, 1), got {value}")


def join_key(path: str, key: str) -> str:
    """The dotted key of `key` inside section `path`."""
    return f"{path}.{key}" if path and key else path or key
