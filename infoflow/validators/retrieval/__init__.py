"""The retrieval validator: ``experiment`` (which models a spec needs), ``targets`` (the
target as a batched torch function; ``target_checks``, why it cannot be learned),
``model`` (the stacked ensemble transformer), ``train``, ``claims``, ``report`` and
``plots``, tied together in ``validator``."""
