"""Reading a parallel corpus (files, tables, the hub or the built-in demo), SentencePiece, and
the token-budget batches training draws."""
