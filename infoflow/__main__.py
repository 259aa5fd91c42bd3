"""``python -m infoflow``: the same as the ``infoflow`` command."""

from infoflow.cli import main

main()
