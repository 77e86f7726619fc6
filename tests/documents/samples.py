"""Files of each format for the document tests: a Word document, XLIFF 1.2 and 2.0, and how
to read an HTML page's tags."""

from __future__ import annotations

import io
from html.parser import HTMLParser

import docx
from docx.opc.constants import RELATIONSHIP_TYPE as RT
from docx.oxml import OxmlElement
from docx.oxml.ns import qn


def tags(html_text: str) -> list[tuple]:
    """The document's tags in order, with their attributes, by html.parser."""
    found = []

    class Tags(HTMLParser):
        def handle_starttag(self, tag, attrs):
            found.append(("open", tag, tuple(attrs)))

        def handle_endtag(self, tag):
            found.append(("close", tag))

    Tags().feed(html_text)
    return found


XLIFF_12 = b"""<?xml version="1.0" encoding="UTF-8"?>
<xliff version="1.2" xmlns="urn:oasis:names:tc:xliff:document:1.2">
  <file source-language="en" datatype="plaintext" original="a.txt"><body>
    <trans-unit id="1"><source>we see <g id="1">the small dog</g>.<x id="2"/></source></trans-unit>
    <trans-unit id="2" translate="no"><source>keep</source></trans-unit>
    <trans-unit id="3"><source>done</source><target>fertig</target></trans-unit>
    <trans-unit id="4"><source>a bird &amp; we</source><target/></trans-unit>
  </body></file>
</xliff>
"""
XLIFF_20 = b"""<?xml version="1.0" encoding="UTF-8"?>
<xliff xmlns="urn:oasis:names:tc:xliff:document:2.0" version="2.0" srcLang="en">
 <file id="f1"><unit id="u1">
   <segment><source>we see <pc id="1">the dog</pc> <ph id="2"/> today.</source></segment>
   <ignorable><source> </source></ignorable>
   <segment state="final"><source>a bird.</source><target>ein Vogel.</target></segment>
 </unit></file>
</xliff>
"""
NS = {"x1": "urn:oasis:names:tc:xliff:document:1.2", "x2": "urn:oasis:names:tc:xliff:document:2.0"}


def word_document() -> bytes:
    """A Word document with bold and italic runs, a hyperlink, a table and a header."""
    document = docx.Document()
    paragraph = document.add_paragraph("we see ")
    paragraph.add_run("the small dog").bold = True
    paragraph.add_run(" because ")
    paragraph.add_run("they").italic = True
    paragraph.add_run(" sleep.")
    linked = document.add_paragraph("visit ")
    address = linked.part.relate_to("https://x.org", RT.HYPERLINK, is_external=True)
    link = OxmlElement("w:hyperlink")
    link.set(qn("r:id"), address)
    run, text = OxmlElement("w:r"), OxmlElement("w:t")
    text.text = "the bird"
    run.append(text)
    link.append(run)
    linked._p.append(link)
    linked.add_run(" today.")
    document.add_paragraph("")
    table = document.add_table(rows=1, cols=2)
    table.cell(0, 0).text, table.cell(0, 1).text = "a dog", "we sleep"
    document.sections[0].header.paragraphs[0].text = "the bird sleeps."
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()
