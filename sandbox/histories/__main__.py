"""`python -m sandbox.histories` (cli.py)."""
from .cli import main

main()
