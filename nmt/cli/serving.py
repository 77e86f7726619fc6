"""`nmt serve`: models behind OpenNMT-py's REST API and a page that draws the attention."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from nmt.cli.common import guarded
from nmt.cli.options import CHECKPOINT_HELP, QuantizeOption, WorkersOption, decoding


@decoding(
    "max_src_len",
    "max_len_extra",
    "no_repeat_ngram",
    "coverage_penalty",
    "max_constraints",
    "shortlist",
    "restrict_to_target_language",
    "precision",
    "zero_shot",
    "pivot_candidates",
)
def serve(
    checkpoint: Annotated[
        list[str],
        typer.Option(
            metavar="[ID=]FILE",
            help=f"{CHECKPOINT_HELP}, served under its run name or ID; repeat to serve "
            "several models.",
        ),
    ],
    adapter: Annotated[
        list[str] | None,
        typer.Option(
            metavar="[NAME=]FILE",
            help="An adapter checkpoint, served under its run name or NAME on the --checkpoint "
            "it was trained on (whose weights it shares); repeat to serve several.",
        ),
    ] = None,
    tm: Annotated[
        list[Path] | None,
        typer.Option(
            "--tm",
            metavar="FILE",
            help="A translation memory (nmt tm build) for every served model of its direction; "
            "repeat for several.",
        ),
    ] = None,
    host: Annotated[
        str, typer.Option(metavar="ADDRESS", help="Address to listen on (loopback by default).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, metavar="N", help="Port.")] = 5000,
    api_key: Annotated[
        str | None,
        typer.Option(
            metavar="KEY",
            envvar="NMT_API_KEY",
            help="Require 'Authorization: Bearer KEY' on every API route but health; the "
            "page and the API docs (/docs) stay readable and ask for it (or set NMT_API_KEY, "
            "which ps does not show).",
        ),
    ] = None,
    max_sentences: Annotated[
        int, typer.Option(min=1, metavar="N", help="Most sentences one request may hold.")
    ] = 64,
    max_body_kib: Annotated[
        int, typer.Option(min=1, metavar="N", help="Largest request body, in KiB.")
    ] = 1024,
    workers: WorkersOption = None,
    quantize: QuantizeOption = None,
    decode: dict | None = None,
) -> None:
    """Serve models over HTTP: OpenNMT-py's API at /translator, a web page at /.

    Decoding options default to each checkpoint's decode section; requests may set beam and
    n_best. SIGTERM finishes the requests in flight, then exits 0.

    \b
    Examples:
      nmt serve --checkpoint runs/demo/best.pt
      nmt serve --checkpoint rnn=runs/demo/best.pt --checkpoint runs/demo_transformer/best.pt
      nmt serve --checkpoint runs/demo/best.pt --quantize int8
      nmt serve --checkpoint base=runs/demo --adapter legal=runs/demo_legal
      curl -d '[{"src": "the small dog sees a bird.", "id": "demo"}]' \\
        localhost:5000/translator/translate
    """

    def action() -> None:
        from nmt.extras import require_extra

        require_extra("serve", "nmt serve")
        from nmt.serve.server import Limits, serve

        limits = Limits(max_sentences=max_sentences, max_body_bytes=max_body_kib * 1024)
        serve(checkpoint, adapter or [], tm or [], host, port, api_key, limits, workers, quantize,
              decode)  # fmt: skip

    guarded(action)
