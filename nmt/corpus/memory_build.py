"""`nmt tm build`: a translation memory (nmt/data/memory.py) of a corpus's split."""

from __future__ import annotations

from pathlib import Path

from nmt.config import DataConfig, Splits
from nmt.data.memory import TranslationMemory
from nmt.data.splits import load_split
from nmt.errors import UserError
from nmt.outputs import check_output


def build_memory(
    data: Path, src_lang: str, tgt_lang: str, output: Path, split: str = "train"
) -> TranslationMemory:
    """Writes the memory of the `split` pairs in `data` ({split}.{src_lang} and
    {split}.{tgt_lang}, or a table) to `output`; the memory."""
    if not Path(data).is_dir():
        raise UserError(f"--data {data} is not a directory: name the corpus directory.")
    config = DataConfig(src_lang=src_lang, tgt_lang=tgt_lang, path=str(data))
    config = DataConfig(**{**config.__dict__, "splits": Splits(train=split, test=None)})
    text = load_split(config, "train")
    check_output(Path(output), "--out")  # against the files read
    memory = TranslationMemory.build(text.src, text.tgt, src_lang, tgt_lang)
    memory.save(output)
    return memory
