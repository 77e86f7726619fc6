"""`nmt export --format ctranslate2`: a Transformer checkpoint as a CTranslate2 model directory.

The weights go through CTranslate2's own Python converter API (`TransformerSpec`: validate,
optimise, save), laid out as our model computes:

| ours                                           | CTranslate2 spec                          |
|------------------------------------------------|-------------------------------------------|
| embeddings * sqrt(d)                           | `scale_embeddings` (its default)          |
| `sinusoid_positions`: sin on even, cos on odd  | `position_encodings.encodings`, the table |
|   features (CTranslate2's own is sin | cos)   |   itself, 1024 positions or more          |
| learned positions (the last one repeats)       | the same table, its last row repeated     |
| relative positions: Shaw's key term            | `relative_position_keys`; values zero     |
| rotary positions on adjacent feature pairs     | `rotary_dim` = head size, interleaved     |
| ALiBi (decoder)                                | `alibi`                                   |
| self-attention query, key, value projections   | `self_attention.linear[0]`, fused q|k|v   |
| cross-attention query; key and value           | `attention.linear[0]`; `linear[1]` k|v    |
| attention output projection                    | `linear[-1]`                              |
| feed-forward Linear, activation, Linear        | `ffn.linear_0`, RELU/SWISH/GELU, `linear_1`|
| attention projections' biases (attention_bias) | the same linears' `bias`, fused alike     |
| nn.LayerNorm (eps 1e-5), pre- or post-norm     | `layer_norm`s, `pre_norm`, eps in config  |
| final LayerNorm of a pre-norm stack            | `encoder.layer_norm`, `decoder.layer_norm`|
| generator (bias included)                      | `decoder.projection`                      |

The vocabularies list our pieces in id order (pad, unk, bos, eos named as `Vocab.pieces`
names them), so CTranslate2's token ids are ours. Sources go in as our SentencePiece pieces,
without bos or eos, exactly the ids our encoder reads; the decoder starts from bos. Reported
attention (for alignments) is the last decoder layer's cross-attention averaged over heads,
what `word_alignment` makes of ours.

The directory also holds the SentencePiece model(s), the experiment config (`nmt.json`: the
decode defaults and languages for `nmt translate --engine ctranslate2`), and README.txt.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from nmt.checkpoint import load_checkpoint, restore_model, whole_model
from nmt.config import Experiment, ModelConfig, config_to_dict
from nmt.data.tokenizer import Tokenizer, Vocab, language_tag
from nmt.errors import UserError
from nmt.extras import require_extra
from nmt.model.attention import Attention
from nmt.model.layers import TransformerLayer
from nmt.model.positions import RelativePositions
from nmt.model.seq2seq import Seq2Seq
from nmt.outputs import check_new_directory, staged
from nmt.translate.shortlist import Shortlist, load_shortlist

CONFIG_FILE = "nmt.json"
VMAP_FILE = "vmap.txt"  # the vocabulary map CTranslate2 reads beside model.bin
MIN_POSITIONS = 1024  # CTranslate2's default max_input_length: the table must reach that far
LAYER_NORM_EPS = 1e-5  # nn.LayerNorm's default; CTranslate2 assumes 1e-6 unless told
INSTALL_HINT = "pip install 'nmt[ctranslate2]'"

log = logging.getLogger(__name__)


def import_ctranslate2(needed_by: str) -> Any:
    require_extra("ctranslate2", needed_by)
    import ctranslate2

    return ctranslate2


def export_ctranslate2(checkpoint: Path, output: Path, shortlist: int = 0) -> Path:
    """Writes `output`, a CTranslate2 model directory for the Transformer in `checkpoint`.

    `output` must not exist, or be an empty directory (its parents are created); it is
    written in a sibling temporary directory and renamed into place, so a failed export
    leaves nothing half-written. `shortlist` K > 0 writes the checkpoint's shortlist (its K
    best per source piece) as CTranslate2's vocabulary map, vmap.txt, and makes it the
    exported decode default (decode.shortlist: K), so its engine decodes with it.
    """
    import_ctranslate2("nmt export --format ctranslate2")
    output = Path(output)
    check_new_directory(output)
    model, tokenizer, config = restore_model(
        whole_model(load_checkpoint(checkpoint), checkpoint, "nmt export"), checkpoint
    )
    refusal = unexportable(config.model)
    if refusal:
        raise UserError(
            f"checkpoint {checkpoint} cannot be exported to CTranslate2: {refusal}. Only "
            "Transformers export (encoder type self_attention, decoder type transformer, "
            "attention multihead with softmax)."
        )
    if tokenizer.tag_place != "source":
        raise UserError(
            f"checkpoint {checkpoint} cannot be exported to CTranslate2: its decoder starts "
            "from the target language's tag (data.tags: decoder_bos), and CTranslate2 starts "
            "every translation from one start token. Translate it with --checkpoint."
        )
    if config.decode.restrict_to_target_language:
        log.info(
            "notice: CTranslate2 takes one vocabulary map for every language, so the export "
            "translates without decode.restrict_to_target_language (the checkpoint's default)"
        )
        config = dataclasses.replace(
            config, decode=dataclasses.replace(config.decode, restrict_to_target_language=False)
        )
    vmap = None
    if shortlist:
        table = load_shortlist(checkpoint, tokenizer.src.size, tokenizer.tgt.size)
        vmap = vocabulary_map(table, shortlist, tokenizer)
    # the exported default is the vocabulary map's K, or none without one
    config = dataclasses.replace(
        config, decode=dataclasses.replace(config.decode, shortlist=shortlist)
    )
    spec = transformer_spec(model, config, tokenizer)
    with staged(output, "--output") as staging:
        spec.validate()
        spec.optimize(quantization=None)
        spec.save(str(staging))
        tokenizer.save(staging)
        if vmap is not None:
            (staging / VMAP_FILE).write_text(vmap, "utf-8")
        config_text = json.dumps(config_to_dict(config), indent=2, ensure_ascii=False)
        (staging / CONFIG_FILE).write_text(config_text + "\n", "utf-8")
        (staging / "README.txt").write_text(readme(output, tokenizer, config), "utf-8")
    return output


def vocabulary_map(shortlist: Shortlist, best: int, tokenizer: Tokenizer) -> str:
    """CTranslate2's vmap.txt: a line per source piece, its tab, its `best` candidates
    separated by spaces; the first line's empty source holds the pieces always allowed."""
    src = tokenizer.src.pieces(range(tokenizer.src.size))
    tgt = tokenizer.tgt.pieces(range(tokenizer.tgt.size))
    lines = ["\t" + " ".join(tgt[i] for i in shortlist.frequent.tolist())]
    for piece, row in zip(src, shortlist.candidates[:, :best].tolist(), strict=True):
        chosen = [tgt[i] for i in row if i >= 0]
        if chosen:
            lines.append(piece + "\t" + " ".join(chosen))
    return "\n".join(lines) + "\n"


def unexportable(config: ModelConfig, runtime: str = "CTranslate2") -> str | None:
    """Why a standard Transformer, such as `runtime` runs, cannot compute this model, or None
    if it can (CTranslate2's; `transformers` checks more besides)."""
    encoder, decoder, attention = config.encoder, config.decoder, config.attention
    if encoder.type != "self_attention" or decoder.type != "transformer":
        return (
            f"it is an RNN model (encoder {encoder.type}, decoder {decoder.type}), and "
            f"{runtime} runs Transformers only"
        )
    if attention.type != "multihead":
        return f"its cross-attention is {attention.type}, not multihead"
    if config.copy:
        return (
            f"it copies from the source (model.copy: true), and {runtime}'s decoder has no "
            "pointer-generator"
        )
    needs = {  # key: (the value a standard Transformer computes, how to say it)
        "normaliser": ("softmax", "softmax"),
        "kv": ("separate", "separate key and value projections (separate)"),
        "window": (None, "global attention (null)"),
        "attn_dim": (decoder.emb_dim, f"decoder.emb_dim ({decoder.emb_dim})"),
        "heads": (decoder.heads, f"decoder.heads ({decoder.heads})"),
    }
    for key, (needed, said) in needs.items():
        value = getattr(attention, key)
        if value != needed:
            return f"model.attention.{key} is {value!r}; {runtime} needs {said}"
    if encoder.position_kind == "alibi":
        return f"model.encoder.positions is 'alibi', and {runtime}'s Transformer encoder has none"
    return None


def _position_options(kind: str | None, heads: int, dim: int) -> dict[str, Any]:
    """The spec's constructor options for positions that act inside the attention."""
    if kind == "relative":
        return {"relative_position": True}
    if kind == "rotary":
        return {"rotary_dim": dim // heads, "rotary_interleave": True}
    if kind == "alibi":
        return {"alibi": True}
    return {}


def transformer_spec(model: Seq2Seq, config: Experiment, tokenizer: Tokenizer) -> Any:
    """The CTranslate2 TransformerSpec holding `model`'s weights and our vocabularies."""
    ct2 = import_ctranslate2("nmt export --format ctranslate2")
    from ctranslate2.specs import common_spec
    from ctranslate2.specs import transformer_spec as specs

    encoder, decoder = config.model.encoder, config.model.decoder
    activations = {"relu": "RELU", "swish": "SWISH", "gelu": "GELU"}
    encoder_spec = specs.TransformerEncoderSpec(
        encoder.layers,
        encoder.heads,
        pre_norm=encoder.norm == "pre",
        activation=getattr(common_spec.Activation, activations[encoder.activation]),
        **_position_options(encoder.position_kind, encoder.heads, encoder.emb_dim),
    )
    decoder_spec = specs.TransformerDecoderSpec(
        decoder.layers,
        decoder.heads,
        pre_norm=decoder.norm == "pre",
        activation=getattr(common_spec.Activation, activations[decoder.activation]),
        alignment_layer=-1,
        alignment_heads=decoder.heads,  # the mean over all heads, as word_alignment takes it
        **_position_options(decoder.positions, decoder.heads, decoder.emb_dim),
    )
    positions = max(MIN_POSITIONS, longest_output(config))
    stack = model.encoder.stages[0]
    _set_input(encoder_spec, model.encoder.embed, model.encoder.positions, positions)
    _set_stack(encoder_spec, stack.layers, stack.norm)
    _set_input(decoder_spec, model.decoder.embed, model.decoder.positions, positions)
    _set_stack(decoder_spec, model.decoder.layers, model.decoder.norm)
    _set_linear(decoder_spec.projection, model.output_layer)
    spec = ct2.specs.TransformerSpec(encoder_spec, decoder_spec)
    src_pieces, tgt_pieces = _pieces(tokenizer.src, "source"), _pieces(tokenizer.tgt, "target")
    spec.register_source_vocabulary(src_pieces)
    spec.register_target_vocabulary(tgt_pieces)
    unk = tgt_pieces[tokenizer.tgt.unk_id]
    settings = {
        "layer_norm_epsilon": LAYER_NORM_EPS,
        "unk_token": unk,
        "bos_token": tgt_pieces[tokenizer.tgt.bos_id],
        "eos_token": tgt_pieces[tokenizer.tgt.eos_id],
        "decoder_start_token": tgt_pieces[tokenizer.tgt.bos_id],
        "add_source_bos": False,
        "add_source_eos": False,  # a Marian vocabulary's </s> is among the pieces given
    }
    for key, value in settings.items():
        setattr(spec.config, key, value)
    return spec


def longest_output(config: Experiment) -> int:
    """The most positions `nmt translate` can use: the longest source and its output limit."""
    decode = config.decode
    return max(
        decode.max_src_len,
        math.ceil(decode.max_src_len * decode.max_len_ratio) + decode.max_len_extra,
    )


def _pieces(vocab: Vocab, side: str) -> list[str]:
    pieces = vocab.pieces(range(vocab.size))
    if len(set(pieces)) < len(pieces):
        raise UserError(
            f"the {side} SentencePiece model names two ids alike, and CTranslate2 finds "
            "tokens by name; it cannot be exported."
        )
    return pieces


def _array(tensor: torch.Tensor) -> np.ndarray:
    return tensor.detach().to("cpu", torch.float32).numpy().copy()


def _set_input(spec: Any, embed: nn.Embedding, added: nn.Module | None, positions: int) -> None:
    """Embeddings (scaled by sqrt(d) there too) and the table of the positions added to them,
    `positions` rows of it: ours, or zeros where positions act inside the attention and
    CTranslate2 still adds a table (an encoder with rotary positions)."""
    embeddings = spec.embeddings[0] if isinstance(spec.embeddings, list) else spec.embeddings
    embeddings.weight = _array(embed.weight)  # an encoder has a list: one per source factor
    if not hasattr(spec, "position_encodings"):
        return
    table = torch.zeros(positions, embed.embedding_dim)
    if added is not None:
        table = added(0, positions, torch.device("cpu"))
    spec.position_encodings.encodings = _array(table)


def _set_stack(spec: Any, layers: nn.ModuleList, final_norm: nn.Module) -> None:
    if isinstance(final_norm, nn.LayerNorm):
        _set_norm(spec.layer_norm, final_norm)
    for layer_spec, layer in zip(spec.layer, layers, strict=True):
        _set_layer(layer_spec, layer)


def _set_layer(spec: Any, layer: TransformerLayer) -> None:
    _set_attention(spec.self_attention, layer.attention, fused_kv_only=False)
    if isinstance(layer.attention.positions, RelativePositions):
        keys = _array(layer.attention.positions.table.weight)
        spec.self_attention.relative_position_keys = keys
        spec.self_attention.relative_position_values = np.zeros_like(keys)  # Shaw's value term
    _set_norm(spec.self_attention.layer_norm, layer.attention_norm)
    if layer.cross_attention is not None:
        _set_attention(spec.attention, layer.cross_attention, fused_kv_only=True)
        _set_norm(spec.attention.layer_norm, layer.cross_attention_norm)
    first, _, _, second = layer.feed_forward
    _set_linear(spec.ffn.linear_0, first)
    _set_linear(spec.ffn.linear_1, second)
    _set_norm(spec.ffn.layer_norm, layer.feed_forward_norm)


def _set_attention(spec: Any, attention: Attention, fused_kv_only: bool) -> None:
    """Self-attention: one fused q|k|v projection; cross-attention: q alone, then k|v.
    Biases (model.*.attention_bias) are fused alike."""
    projections = (attention.scorer.query_proj, attention.scorer.key_proj, attention.value_proj)
    for name in ("weight", "bias"):
        query, key, value = (getattr(linear, name) for linear in projections)
        if query is None:
            continue
        if fused_kv_only:
            setattr(spec.linear[0], name, _array(query))
            setattr(spec.linear[1], name, _array(torch.cat([key, value])))
        else:
            setattr(spec.linear[0], name, _array(torch.cat([query, key, value])))
    _set_linear(spec.linear[-1], attention.output_proj)


def _set_linear(spec: Any, linear: nn.Linear) -> None:
    spec.weight = _array(linear.weight)
    if linear.bias is not None:
        spec.bias = _array(linear.bias)


def _set_norm(spec: Any, norm: nn.LayerNorm) -> None:
    spec.gamma, spec.beta = _array(norm.weight), _array(norm.bias)


def readme(output: Path, tokenizer: Tokenizer, config: Experiment) -> str:
    """README.txt: what the directory holds and how to translate with it."""
    spm_src = "spm.model" if tokenizer.joint else "spm.src.model"
    spm_tgt = "spm.model" if tokenizer.joint else "spm.tgt.model"
    data, decode = config.data, config.decode
    directions = ", ".join(f"{source} -> {target}" for source, target in data.pairs)
    tags = ", ".join(map(language_tag, tokenizer.tags))
    tagging = (
        f"""
Sources start with the tag of the language to write ({tags}): `nmt translate --tgt-lang
LANG` adds it; with CTranslate2 directly, put it before the source's pieces.
"""
        if tokenizer.tags
        else ""
    )
    return f"""\
{config.name}: a Transformer translating {directions}, exported by \
`nmt export --format ctranslate2`
{tagging}
model.bin, config.json, *_vocabulary.json  the CTranslate2 model
{spm_src}{"" if tokenizer.joint else ", " + spm_tgt}  SentencePiece: sources are split into its \
pieces (no <s> or </s> added)
{CONFIG_FILE}  the training config; nmt translate takes its decode defaults from it

Translate with nmt (lines in, lines out, as with a checkpoint; {INSTALL_HINT}):

  nmt translate --engine ctranslate2 --model {output} --input test.txt --beam 5
  nmt translate --engine ctranslate2 --model {output} --quantize int8 < test.txt

With --beam 1 that gives the checkpoint's own greedy translations; beam search ranks
hypotheses by log-probability / ((5 + length) / 6) ** alpha (alpha {decode.alpha}) as
`nmt translate --checkpoint` does, and each sentence stops at
ceil({decode.max_len_ratio} * source length) + {decode.max_len_extra} tokens.

Or with CTranslate2 directly, where beam search ranks by log-probability / length ** penalty:

  import ctranslate2, sentencepiece
  src = sentencepiece.SentencePieceProcessor(model_file="{output}/{spm_src}")
  tgt = sentencepiece.SentencePieceProcessor(model_file="{output}/{spm_tgt}")
  translator = ctranslate2.Translator("{output}", compute_type="default")  # or "int8"
  lines = ["a source sentence ."]
  results = translator.translate_batch(
      src.encode(lines, out_type=str), beam_size={decode.beam}, min_decoding_length=0
  )
  print([tgt.decode(result.hypotheses[0]) for result in results])
"""
