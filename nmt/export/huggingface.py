"""`nmt export --format transformers`: a Transformer checkpoint as a `transformers` model
directory, which `AutoModelForSeq2SeqLM`, `AutoTokenizer` and `pipeline("translation")` load.

The architecture is the one of `transformers` whose layers compute ours
(nmt/export/bart_layout.py maps the weights): Marian for post-norm models, Pegasus (the same
layers with pre-norm and a final LayerNorm per stack) for pre-norm ones. The tokenizer is
our SentencePiece model as a `tokenizers` one, which adds nothing to a source (ours reads
no </s>), or, for a model imported from Marian, Marian's own tokenizer files. The model card
(README.md) names the training data, the config, the scores and the nmt version.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import torch

from nmt.checkpoint import load_checkpoint, restore_model, whole_model
from nmt.config import Experiment, config_to_dict
from nmt.data.tokenizer import Tokenizer, Vocab
from nmt.errors import UserError
from nmt.export.bart_layout import to_theirs
from nmt.export.converter import longest_output, unexportable
from nmt.extras import require_extra
from nmt.model.seq2seq import Seq2Seq
from nmt.outputs import check_new_directory, staged
from nmt.version import __version__

NEEDED_BY = "nmt export --format transformers"
MIN_POSITIONS = 512  # OPUS-MT's table; longer if our output limit needs it
ACTIVATIONS = {"relu": "relu", "swish": "swish", "gelu": "gelu"}  # ours -> transformers'


RUNTIME = "transformers (Marian, Pegasus)"


def export_transformers(checkpoint: Path, output: Path) -> Path:
    """Writes `output`, a `transformers` model directory for the Transformer in `checkpoint`
    (new or empty; written beside it and renamed into place)."""
    require_extra("hub", NEEDED_BY)
    output = Path(output)
    check_new_directory(output)
    payload = whole_model(load_checkpoint(checkpoint), checkpoint, "nmt export")
    model, tokenizer, config = restore_model(payload, checkpoint)
    refusal = unexportable(config.model, RUNTIME) or transformers_refusal(config, tokenizer)
    if refusal:
        instead = (
            "Export it to CTranslate2 instead (nmt export --format ctranslate2)"
            if unexportable(config.model) is None
            else "Neither can CTranslate2 run it; translate and serve it with nmt itself"
        )
        raise UserError(
            f"checkpoint {checkpoint} cannot be exported to transformers: {refusal}. {instead}."
        )
    their_model = transformers_model(model, config, tokenizer)
    with staged(output, "--output") as staging:
        their_model.save_pretrained(staging)
        transformers_tokenizer(tokenizer, config).save_pretrained(staging)
        _name_fast_tokenizer_portably(staging / "tokenizer_config.json")
        card = model_card(checkpoint, payload, config, type(their_model).__name__)
        (staging / "README.md").write_text(card, "utf-8")
    return output


def transformers_refusal(config: Experiment, tokenizer: Tokenizer) -> str | None:
    """Why no architecture of `transformers` computes this model as we do (None: one does);
    the CTranslate2 reasons (RNNs, copying, other attentions) are checked before."""
    encoder, decoder, model = config.model.encoder, config.model.decoder, config.model
    for side, kind in (("encoder", encoder.position_kind), ("decoder", decoder.positions)):
        if kind != "sinusoidal":
            return (
                f"model.{side}.positions is {kind!r}, and Marian and Pegasus add fixed "
                "sinusoids to the embeddings only"
            )
    for key in ("norm", "activation"):
        if getattr(encoder, key) != getattr(decoder, key):
            return f"model.encoder.{key} and model.decoder.{key} differ, and there they are one"
    if decoder.norm == "pre" and not model.share_embeddings:
        return (
            "a pre-norm model exports as Pegasus, whose encoder and decoder share one "
            "embedding matrix (model.share_embeddings: true)"
        )
    if tokenizer.tags:
        return "it reads target-language tags, which transformers' tokenizer lacks"
    if tokenizer.src.vocabulary is None and not tokenizer.joint:
        return "it has two SentencePiece models, and a transformers tokenizer holds one"
    plain = tokenizer.src.vocabulary is None
    if plain and tokenizer.src.size != tokenizer.src.processor.get_piece_size():
        return "its SentencePiece model lacks pad, bos or eos, which nmt appended"
    return None


def transformers_model(model: Seq2Seq, config: Experiment, tokenizer: Tokenizer) -> Any:
    """The Marian (post-norm) or Pegasus (pre-norm) model holding `model`'s weights."""
    from transformers import (
        GenerationConfig,
        MarianConfig,
        MarianMTModel,
        PegasusConfig,
        PegasusForConditionalGeneration,
    )

    encoder, decoder = config.model.encoder, config.model.decoder
    tgt, share = tokenizer.tgt, config.model.share_embeddings
    settings = dict(
        d_model=decoder.emb_dim,
        encoder_layers=encoder.layers,
        decoder_layers=decoder.layers,
        encoder_attention_heads=encoder.heads,
        decoder_attention_heads=decoder.heads,
        encoder_ffn_dim=encoder.ff_dim,
        decoder_ffn_dim=decoder.ff_dim,
        activation_function=ACTIVATIONS[decoder.activation],
        dropout=decoder.dropout,
        attention_dropout=config.model.attention.dropout,
        activation_dropout=decoder.dropout,
        max_position_embeddings=max(MIN_POSITIONS, longest_output(config)),
        scale_embedding=True,
        pad_token_id=tgt.pad_id,
        eos_token_id=tgt.eos_id,
        bos_token_id=tgt.bos_id,
        decoder_start_token_id=tgt.bos_id,
        forced_eos_token_id=None,
        tie_word_embeddings=decoder.tie_embeddings,
    )
    if decoder.norm == "post":
        their_config = MarianConfig(
            vocab_size=tokenizer.src.size,
            decoder_vocab_size=tgt.size,
            share_encoder_decoder_embeddings=share,
            **settings,
        )
        their_model = MarianMTModel(their_config)
    else:
        their_model = PegasusForConditionalGeneration(
            PegasusConfig(vocab_size=tgt.size, **settings)
        )
    weights = to_theirs(model.state_dict(), decoder.emb_dim)
    if share:
        weights["model.shared.weight"] = weights["model.encoder.embed_tokens.weight"]
    expected = their_model.state_dict()
    for name, tensor in expected.items():
        if name not in weights and name.endswith(".bias"):  # our projections without one
            weights[name] = torch.zeros_like(tensor)
    missing, unexpected = their_model.load_state_dict(weights, strict=False)
    left = [name for name in missing if "embed_positions" not in name]
    if left or unexpected:  # a mapping that misses a weight must never export quietly
        raise RuntimeError(f"weights not mapped: {left or unexpected}")
    their_model.generation_config = GenerationConfig(
        decoder_start_token_id=tgt.bos_id,
        bos_token_id=tgt.bos_id,
        eos_token_id=tgt.eos_id,
        pad_token_id=tgt.pad_id,
        num_beams=config.decode.beam,
        length_penalty=config.decode.alpha,
        max_length=longest_output(config) + 1,  # with the start token
    )
    return their_model.eval()


def transformers_tokenizer(tokenizer: Tokenizer, config: Experiment) -> Any:
    """Marian's tokenizer for a vocabulary imported from Marian; otherwise our SentencePiece
    model as a `tokenizers` tokenizer that encodes as SentencePiece does and adds nothing."""
    if tokenizer.src.vocabulary is not None:
        return marian_tokenizer(tokenizer, config.data.src_lang, config.data.tgt_lang)
    from transformers import PreTrainedTokenizerFast
    from transformers.convert_slow_tokenizer import SpmConverter, import_protobuf

    vocab = tokenizer.src
    proto = import_protobuf().ModelProto()
    proto.ParseFromString(vocab.model_proto)
    pieces = [(piece.piece, piece.score) for piece in proto.pieces]
    bpe = proto.trainer_spec.model_type == proto.trainer_spec.BPE
    table = {piece: index for index, (piece, _) in enumerate(pieces)} if bpe else pieces
    backend = SpmConverter.build_tokenizer_from_spm_proto(proto, table, legacy=False)
    names = vocab.pieces([vocab.unk_id, vocab.pad_id, vocab.bos_id, vocab.eos_id])
    return PreTrainedTokenizerFast(
        tokenizer_object=backend,
        unk_token=names[0],
        pad_token=names[1],
        bos_token=names[2],
        eos_token=names[3],
        clean_up_tokenization_spaces=False,
        model_max_length=config.decode.max_src_len,
    )


def _name_fast_tokenizer_portably(path: Path) -> None:
    """transformers 5 names its fast tokenizer class TokenizersBackend, which 4.x lacks;
    PreTrainedTokenizerFast is the same class in both."""
    settings = json.loads(path.read_text("utf-8"))
    if settings.get("tokenizer_class") == "TokenizersBackend":
        settings["tokenizer_class"] = "PreTrainedTokenizerFast"
        path.write_text(json.dumps(settings, indent=2, ensure_ascii=False) + "\n", "utf-8")


def marian_tokenizer(tokenizer: Tokenizer, source_lang: str, target_lang: str) -> Any:
    """MarianTokenizer over our two SentencePiece models and our vocabulary of pieces."""
    from transformers import MarianTokenizer

    src, tgt = tokenizer.src, tokenizer.tgt
    with tempfile.TemporaryDirectory() as directory:
        files = Path(directory)
        (files / "source.spm").write_bytes(src.model_proto)
        (files / "target.spm").write_bytes(tgt.model_proto)
        _write_vocab(files / "vocab.json", src)
        separate = src.vocabulary != tgt.vocabulary
        if separate:
            _write_vocab(files / "target_vocab.json", tgt)
        return MarianTokenizer(
            source_spm=str(files / "source.spm"),
            target_spm=str(files / "target.spm"),
            vocab=str(files / "vocab.json"),
            target_vocab_file=str(files / "target_vocab.json") if separate else None,
            separate_vocabs=separate,
            source_lang=source_lang,
            target_lang=target_lang,
        )


def _write_vocab(path: Path, vocab: Vocab) -> None:
    pieces = vocab.vocabulary or []
    text = json.dumps({piece: index for index, piece in enumerate(pieces)}, ensure_ascii=False)
    path.write_text(text, "utf-8")


def model_card(checkpoint: Path, payload: dict, config: Experiment, architecture: str) -> str:
    """README.md: what the model is, what it was trained on, its scores, and how to use it."""
    data, decode = config.data, config.decode
    corpus = data.hub_id or data.path or ("nmt's demo corpus" if data.demo else "local files")
    metrics = payload.get("metrics") or {}
    scores = "\n".join(f"| {name} | {value} |" for name, value in sorted(metrics.items()))
    settings = json.dumps(config_to_dict(config.model), indent=2)
    return f"""\
---
language: [{data.src_lang}, {data.tgt_lang}]
library_name: transformers
pipeline_tag: translation
tags: [translation, nmt]
---

# {config.name}: {data.src_lang} → {data.tgt_lang}

A Transformer trained with nmt {__version__} and exported by `{NEEDED_BY}` as
`{architecture}`, whose layers compute what nmt's compute (checkpoint `{checkpoint.name}`,
step {payload.get("step", "?")}).

- Training data: {corpus} (`{data.src_lang}` → `{data.tgt_lang}`).
- Tokenizer: nmt's SentencePiece model; sources are its pieces, with no `</s>` added,
  except for a model imported from Marian, whose tokenizer is Marian's own.

## Scores at the checkpoint

| metric | value |
|---|---|
{scores or "| (none recorded) | |"}

## Use

```python
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer, pipeline

model = AutoModelForSeq2SeqLM.from_pretrained("THIS_DIRECTORY")
tokenizer = AutoTokenizer.from_pretrained("THIS_DIRECTORY")
translate = pipeline("translation", model=model, tokenizer=tokenizer)
print(translate("a source sentence")[0]["translation_text"])
```

Greedy search (`num_beams=1`) gives nmt's greedy translations, up to the length limit:
nmt stops each output at ceil({decode.max_len_ratio} × source pieces) + {decode.max_len_extra},
`generate` at `max_length` ({longest_output(config) + 1}) unless given `max_new_tokens`. The
generation config asks
for nmt's beam ({decode.beam}); beam search in `transformers` ranks by
log-probability / length ** length_penalty (set to nmt's alpha, {decode.alpha}), where
nmt ranks by log-probability / ((5 + length) / 6) ** alpha, so long outputs may differ.

## Model config (nmt)

```json
{settings}
```
"""
