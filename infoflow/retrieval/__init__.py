"""The ``retrieval`` family: the InfoFlow engine (theory note ``retrieval.md``).

Stages: ``parse`` (target text -> expression tree, by whitelist), ``tree`` (-> comparison
tree and elimination schedule), ``flow`` (-> plan on an architecture and the
information-set DAG), ``cost`` (-> exponent), ``predict`` (spec -> predictions), ``explain``
(the derivation in words).
"""
