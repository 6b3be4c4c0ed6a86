"""``python -m stratamem.cli``: the same command as ``stratamem``."""

from . import main

main()
