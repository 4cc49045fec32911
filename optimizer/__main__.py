"""`python -m optimizer` runs the ccopt CLI."""

from optimizer.cli import main

main()
