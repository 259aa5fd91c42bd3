"""The icl_markov validator: ``experiment`` (a spec's groups and predictions), ``data`` (the
chains, test sets and training batches), ``model`` (the stacked GPT), ``train``, ``phases``
(phases and thresholds from the metrics), ``claims``, ``report`` and ``plots``, tied
together in ``validator``."""
