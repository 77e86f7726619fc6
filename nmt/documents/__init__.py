"""Translating files people translate (HTML, XML, Markdown, subtitles, gettext catalogues,
XLIFF, Word documents, plain text): each format's own library reads the file, its text goes
through markup translation (nmt/translate/markup.py) with its inline formatting as tags, and
the same library writes the file back with the structure it had."""
