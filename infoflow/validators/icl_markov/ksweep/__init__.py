"""The K sweep: many models at K = number of training chains, their phases over training,
and K*_1, K*_2 and tau_2Gen across K: ``data`` (a group, its members' chains and test sets),
``train`` (the training and the evaluation), ``phases`` (each member's phase calls),
``thresholds`` (the members across K, with ``logistic`` for the fit of K*_1), ``claims``,
``judge`` (a trained group -> its record), ``report`` and ``plots``."""
