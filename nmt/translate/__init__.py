"""Sentences in, translations out: the Translator (one checkpoint or an ensemble), how
`nmt translate` reads and writes lines, word alignments, int8 models, and the evaluation that
`nmt eval` and the end of training share."""
