"""The decoder alone: the second MLP trained by itself, K*_2 as its capacity and the task
vector's dimension D_phi against the C^2 criterion: ``data`` (the group, each member's chains
and codes, G2's level), ``train`` (the decoder and its fit), ``judge`` (the measurement and
the record), ``claims`` and ``report``."""
