"""The ground floor: what every other part of infoflow stands on, importing nothing of
infoflow above it (a test holds it to that).

``errors`` (the user's errors, exit code 2), ``files`` (bounded reads, whole-or-nothing
writes), ``text`` (one-line text, Markdown and LaTeX escaping, byte counts for people),
``results`` (typed predictions and results), ``spec_base`` (the base classes of every spec),
``units`` (durations typed on the command line), ``notes`` (progress notes that ``--quiet``
silences) and ``version``.
"""
