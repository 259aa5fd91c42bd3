"""The ``retrieval`` family: the InfoFlow engine (theory note ``retrieval.md``).

Stages, each a module named for what it turns into what, and the types that pass between
them (:mod:`.types`):

- ``spec``: the spec (pydantic): its target must parse, and read nothing beyond the sequence;
- ``text_to_expression``: target text -> the expression tree (:mod:`.expression`), by
  whitelist, never executed;
- ``expression_to_canonical`` (+ ``algebra``): -> the canonical form, the reductions the
  planner places whatever the spelling;
- ``canonical_to_tree``: -> the comparison tree (order beta', dimension beta1);
- ``tree_to_steps``: -> every way to resolve each comparison as steps (fragments);
- ``steps_to_schedule`` (+ ``layer_fit``): + an architecture's shape -> the best schedule,
  and the minimal architectures;
- ``schedule_to_cost`` (+ ``laws``): -> the exponent's terms, the exponent, the bottleneck;
- ``schedule_to_flow``: -> information sets and the information-set DAG;
- ``derive``: the stages in order for one spec, cached; ``predict``: -> predictions;
  ``explain``: the derivation in words, and the DAG as text; ``sweep``: a spec's sweep,
  vectorised.

``mechanisms/`` holds one module per way to resolve a comparison (max-position retrieval,
pooling, k-th retrieval, global aggregation, fixed-position and neighbour fetch): its steps,
its cost, its provenance and its sentence for explain.

Glossary:

- T, d, E, n: sequence length, token width, embedding width, head width (E / heads);
- eps, alpha: the target precision and the cost exponent, parameters ~ eps^-alpha;
- comparison: a reduction over token indices (min, max, sum, k-th), with its score's
  factors (the terms coupling the same indices) and the comparisons nested in them;
- order (beta'): the most token indices one score couples once the reductions are read as
  variable elimination; dimension (beta1): the most comparisons side by side at one level;
- readout: the extra token the prediction is read from; holder: the token (or the readout)
  a step's result goes to; information set: what a token holds after a layer;
- step kinds: retrieve (max-position), pool (averaging head), peel (k-th retrieval, one rank
  per layer), kth (k-th retrieval by one head, Theorem 2), fetch (fixed positions), shift
  (a neighbour x[t - 1]); a fragment: the steps resolving one comparison and what is nested;
- schedule: which step of which part runs in which layer; placement: one part's place in it;
  global: the fallback that averages all T positions;
- Theorem 1: depth separation (the pairwise minimum needs alpha linear in T on one layer,
  alpha = 1 on two); Theorem 2: the single-head k-th exponent (T - k - 1)/(n + 1);
  Theorem 3: the decoding cost law alpha_decode(T0) = T0*d/E - c;
- [R]: a reconstruction (a named option with a documented default; docs/retrieval.md).
"""
