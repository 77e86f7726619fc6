"""Jobs that read a whole corpus and write files: cleaning it (`nmt clean`), distilling it
with a teacher (`nmt distill`), and learning a vocabulary shortlist from it (`nmt
shortlist`). They sit above the Translator, which distillation and model-scored cleaning
translate and score with."""
