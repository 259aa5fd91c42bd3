"""The clock runs: each mechanism's formation time measured in isolation, then the race of the
clocks, which predicts K*_1: ``data`` (a clock group, its models and test sets), ``train``,
``measure`` (evaluations -> each member's clock), ``race`` (the clocks -> the race -> claims
against the K sweep), ``report`` and ``plots``."""
