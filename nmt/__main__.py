"""`python -m nmt` runs the command line (torchrun needs a module entry point)."""

from nmt.cli import main

main()
