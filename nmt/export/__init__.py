"""Models for other runtimes: a Transformer checkpoint as a CTranslate2 model, and
translating with one (needs the `ctranslate2` extra)."""
