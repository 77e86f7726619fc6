"""The `nmt` command: parses arguments and calls one library function per command.

Heavy libraries (torch, datasets, sacrebleu) are imported inside the commands, so
`nmt --help` and argument errors answer at once. The commands live in training.py,
adapting.py, translating.py, evaluating.py, scoring.py, distilling.py, cleaning.py,
serving.py, exporting.py, shortlisting.py and memory.py, the options they share in
options.py and decoding_options.py; they are registered here, in the order `nmt --help`
lists them.
"""

import typer

from nmt.cli import (
    adapting,
    cleaning,
    distilling,
    evaluating,
    exporting,
    memory,
    scoring,
    serving,
    shortlisting,
    training,
    translating,
)

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    help="Train, run and score attention-based neural machine translation models.",
)
app.command()(training.train)
app.command()(translating.translate)
app.command(name="eval")(evaluating.evaluate)
app.command()(scoring.score)
app.command()(distilling.distill)
app.command()(cleaning.clean)
app.command()(training.average)
app.add_typer(adapting.adapter_app, name="adapter")
app.command()(training.plot)
app.command()(serving.serve)
app.command()(exporting.export)
app.command(name="import")(exporting.import_)
app.command()(shortlisting.shortlist)
app.add_typer(memory.tm_app, name="tm")


def main() -> None:
    app()
