"""Experiments that check infoflow's predictions by training real models (torch).

Laid out like the theory: the shared pipeline (``run``: plan -> register -> train -> judge
-> write), the ``protocol`` every family's validator implements, typed ``claims``, the
``store``, the ``executor`` (local or Ray), the ``report``, shared ``plots`` helpers, the
stacked-ensemble optimiser step and checkpoints (``ensemble``) and the Markov chains two
families use (``chains``); then one subpackage per family (``retrieval``, ``icl_markov``,
``looped_kv``). The theory package never imports this one at start-up, so ``infoflow
predict`` runs without torch installed.
"""
