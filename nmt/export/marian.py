"""`nmt import`: a Marian model of `transformers` (the OPUS-MT models) as an nmt checkpoint,
which translate, eval, score, serve, ensembles, constraints, the CTranslate2 export and
`train.init_from` take like any other.

What Marian computes maps onto config keys whose defaults leave other models alone:
post-norm layers (`norm: post`), swish (`activation: swish`), biased attention projections
(`attention_bias: true`), the logits bias (our output layer's own bias), tied and shared
embeddings. Its weights map as nmt/export/bart_layout.py says, its sinusoids by permuting
the feature axis. Its tokenizer becomes a vocabulary of its own (nmt/data/tokenizer.py):
two SentencePiece models that segment, vocab.json that numbers the pieces, sources that end
with </s>, and a decoder that starts from <pad>.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import yaml

from nmt.checkpoint import checkpoint_payload, save_checkpoint
from nmt.config import Experiment, config_from_dict, config_to_dict
from nmt.data.tokenizer import Tokenizer, Vocab
from nmt.errors import UserError
from nmt.export.bart_layout import from_theirs
from nmt.extras import require_extra
from nmt.model.seq2seq import build_model
from nmt.outputs import check_output, write_output
from nmt.reads import record_directory

NEEDED_BY = "nmt import"
ACTIVATIONS = {"swish": "swish", "silu": "swish", "relu": "relu", "gelu": "gelu"}
FILES = ("source.spm", "target.spm", "vocab.json")

log = logging.getLogger(__name__)


def import_marian(
    source: str, output: Path, src_lang: str | None = None, tgt_lang: str | None = None
) -> Path:
    """Writes `output`, an nmt checkpoint of the Marian model in directory or hub id
    `source`, and beside it a config to fine-tune it with (`output` with suffix .yaml)."""
    require_extra("hub", NEEDED_BY)
    output = Path(output)
    fine_tuning = output.with_suffix(".yaml")
    if fine_tuning == output:
        raise UserError(
            f"{NEEDED_BY} --output {output}: the config to fine-tune the checkpoint with is "
            f"written beside it as {fine_tuning.name}, the checkpoint's own name. Give the "
            f"checkpoint another suffix, e.g. --output {output.with_suffix('.pt')}."
        )
    from transformers import AutoConfig, MarianMTModel

    directory = model_directory(source)
    their_config = AutoConfig.from_pretrained(directory)
    refusal = _refusal(their_config)
    if refusal:
        raise UserError(f"{NEEDED_BY} --from {source}: {refusal}.")
    settings = _tokenizer_settings(directory)
    tokenizer = marian_vocabulary(directory, their_config, settings)
    languages = _languages(settings, src_lang, tgt_lang, source)
    config = experiment(their_config, *languages, name=Path(source).name)
    _check_special_ids(their_config, tokenizer, source)
    _warn_about_generation(directory, their_config, source)
    model = build_model(config.model, tokenizer.src, tokenizer.tgt)
    their_model = MarianMTModel.from_pretrained(directory, dtype="float32")
    names = list(model.state_dict())
    model.load_state_dict(from_theirs(their_model.state_dict(), names, their_config.d_model))
    output.parent.mkdir(parents=True, exist_ok=True)
    for written in (output, fine_tuning):
        check_output(written, "--output")
    save_checkpoint(output, checkpoint_payload(model, config, tokenizer, step=0, metrics={}))
    write_output(fine_tuning, fine_tuning_yaml(config, output).encode("utf-8"))
    return output


def _warn_about_generation(directory: Path, their_config: Any, source: str) -> None:
    """OPUS-MT's generation config bans <pad> (bad_words_ids), which nmt's search never
    writes anyway, and forces eos at max_length (512), far beyond nmt's length limit, which
    ends a translation without eos instead. Any other ban is named: nmt does not apply it."""
    path = directory / "generation_config.json"
    if not path.is_file():
        return
    banned = json.loads(path.read_text("utf-8")).get("bad_words_ids") or []
    others = [ids for ids in banned if ids != [their_config.pad_token_id]]
    if others:
        log.warning(
            "warning: %s --from %s: its generation config bans %s (bad_words_ids), which "
            "nmt's search does not ban (it bans only <pad>); give them as excluded phrases "
            "(--constraints) where they matter.",
            NEEDED_BY,
            source,
            others,
        )


def model_directory(source: str) -> Path:
    """A local directory as it is; anything else is a hub id, downloaded (or found in the
    hub's cache) by huggingface_hub."""
    path = Path(source)
    if path.is_dir():
        missing = [name for name in ("config.json", *FILES) if not (path / name).is_file()]
        if missing:
            raise UserError(
                f"{NEEDED_BY} --from {source}: the directory lacks {', '.join(missing)}; a "
                "Marian model directory (as MarianMTModel.save_pretrained and "
                "MarianTokenizer.save_pretrained write it) has config.json, the weights, "
                "source.spm, target.spm and vocab.json."
            )
        return record_directory(path, "--from")
    from huggingface_hub import snapshot_download

    try:
        return record_directory(snapshot_download(repo_id=source), "--from")
    except Exception as error:  # the hub's errors: offline, no such repo, no access
        raise UserError(
            f"{NEEDED_BY} --from {source}: not a directory, and the hub did not give a model of "
            f"that id ({type(error).__name__}: {str(error).splitlines()[0][:200]}). Give a "
            "local directory, or an id such as Helsinki-NLP/opus-mt-en-de where the network "
            "reaches the hub."
        ) from None


def _refusal(config: Any) -> str | None:
    """Why our Transformer cannot compute this model (None: it can)."""
    if config.model_type != "marian":
        return f"it is a {config.model_type!r} model; nmt imports Marian models (OPUS-MT)"
    if not config.scale_embedding:
        return "its embeddings are not scaled by sqrt(d_model), and nmt's always are"
    if config.activation_function not in ACTIVATIONS:
        return (
            f"its activation {config.activation_function!r} is none of nmt's "
            f"({', '.join(sorted(set(ACTIVATIONS.values())))})"
        )
    if config.d_model % 2:
        return "its d_model is odd, and nmt's sinusoids pair every feature"
    return None


def marian_vocabulary(directory: Path, config: Any, settings: dict) -> Tokenizer:
    """Marian's two SentencePiece models and vocab.json (target_vocab.json where the sides
    have their own: `settings`, its tokenizer_config.json) as our tokenizer; the lists are
    padded to the model's sizes."""
    separate = settings.get("separate_vocabs", False)
    shared = config.share_encoder_decoder_embeddings
    src_pieces = _pieces(directory / "vocab.json", config.vocab_size)
    tgt_file = directory / ("target_vocab.json" if separate else "vocab.json")
    tgt_size = config.vocab_size if shared else config.decoder_vocab_size
    tgt_pieces = _pieces(tgt_file, tgt_size)
    return Tokenizer(
        Vocab((directory / "source.spm").read_bytes(), (), src_pieces, ends_with_eos=True),
        Vocab((directory / "target.spm").read_bytes(), (), tgt_pieces),
    )


def _pieces(path: Path, size: int) -> list[str]:
    """The pieces of vocab.json in id order, padded with pieces no text segments into."""
    try:
        ids = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError) as error:
        raise UserError(f"{NEEDED_BY}: cannot read {path} ({error}).") from None
    pieces = [f"<unused {index}>" for index in range(max(size, len(ids)))]
    for piece, index in ids.items():
        pieces[index] = piece
    if len(pieces) != size or len(set(ids.values())) != len(ids):
        raise UserError(
            f"{NEEDED_BY}: {path} numbers {len(ids)} pieces up to {max(ids.values())}, and the "
            f"model has {size} embeddings; the vocabulary and the weights do not belong "
            "together."
        )
    return pieces


def _tokenizer_settings(directory: Path) -> dict:
    path = directory / "tokenizer_config.json"
    return json.loads(path.read_text("utf-8")) if path.is_file() else {}


def _languages(
    settings: dict, src_lang: str | None, tgt_lang: str | None, source: str
) -> tuple[str, str]:
    """The languages named on the command line, else in tokenizer_config.json (`settings`)."""
    src = src_lang or settings.get("source_lang")
    tgt = tgt_lang or settings.get("target_lang")
    if not (src and tgt):
        raise UserError(
            f"{NEEDED_BY} --from {source}: its tokenizer_config.json names no source or target "
            "language; give them with --src-lang and --tgt-lang."
        )
    return src, tgt


def _check_special_ids(config: Any, tokenizer: Tokenizer, source: str) -> None:
    """Marian's ids of pad, eos and the decoder's first token must be the vocabulary's."""
    tgt = tokenizer.tgt
    theirs = (config.pad_token_id, config.eos_token_id, config.decoder_start_token_id)
    ours = (tgt.pad_id, tgt.eos_id, tgt.bos_id)
    if theirs != ours:
        raise UserError(
            f"{NEEDED_BY} --from {source}: its config gives pad, eos and decoder start ids "
            f"{theirs}, and its vocabulary {ours} (<pad>, </s>, and <s> or else <pad>)."
        )


def experiment(config: Any, src_lang: str, tgt_lang: str, name: str) -> Experiment:
    """The nmt config of a Marian model: its sizes, and the keys that make ours compute it."""
    activation = ACTIVATIONS[config.activation_function]
    layers = dict(norm="post", activation=activation, attention_bias=True, dropout=config.dropout)
    encoder = dict(
        type="self_attention",
        emb_dim=config.d_model,
        layers=config.encoder_layers,
        heads=config.encoder_attention_heads,
        ff_dim=config.encoder_ffn_dim,
        **layers,
    )
    decoder = dict(
        type="transformer",
        emb_dim=config.d_model,
        layers=config.decoder_layers,
        heads=config.decoder_attention_heads,
        ff_dim=config.decoder_ffn_dim,
        tie_embeddings=config.tie_word_embeddings,
        **layers,
    )
    attention = dict(
        type="multihead",
        attn_dim=config.d_model,
        heads=config.decoder_attention_heads,
        kv="separate",
        dropout=config.attention_dropout,
    )
    return config_from_dict(
        {
            "name": name,
            "data": {"src_lang": src_lang, "tgt_lang": tgt_lang},
            "model": {
                "encoder": encoder,
                "decoder": decoder,
                "attention": attention,
                "share_embeddings": config.share_encoder_decoder_embeddings,
            },
        }
    )


def fine_tuning_yaml(config: Experiment, checkpoint: Path) -> str:
    """A training config that fine-tunes the imported model: its model section (init_from
    needs the same shapes), a low constant learning rate (a pretrained model forgets under
    the 1e-3 that suits training from scratch), and a corpus path to fill in."""
    raw = config_to_dict(config)
    tuning = {
        "name": f"{config.name}-finetuned",
        "data": {
            "src_lang": config.data.src_lang,
            "tgt_lang": config.data.tgt_lang,
            "path": "YOUR_CORPUS_DIRECTORY",
        },
        "model": raw["model"],
        "train": {"init_from": str(checkpoint), "lr": 2.0e-5, "max_steps": 2000},
    }
    header = (
        f"# Fine-tune {checkpoint.name} (written by nmt import): set data.path to a directory\n"
        "# of train/valid/test.{src,tgt} files, then: nmt train --config THIS_FILE\n"
    )
    return header + yaml.safe_dump(tuning, sort_keys=False, allow_unicode=True)
