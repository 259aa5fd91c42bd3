"""The ``icl_markov`` family: memorization vs generalization phases of in-context learning
on K Markov chains, and the thresholds K*_1 and K*_2 (theory note ``icl_markov.md``).

Stages: ``spec`` (the pydantic model), ``calibration`` (the shipped constants and their
provenance; reading and writing calibration files), ``race`` (clocks -> K*_1), ``predict``
(spec -> predictions), ``fit`` (validation results -> a new calibration file).

Glossary:

- C, K, N: states, training chains (the data diversity), context length; alpha: the
  Dirichlet parameter of the transition rows; ID / OOD: test sequences of the K training
  chains / of freshly drawn chains;
- phases, each a reference predictor: G1 (in-context unigram), G2 (in-context bigram, the
  statistical induction head), M1 (posterior over the K chains from unigram evidence,
  predicting their transition rows), M2 (posterior from bigram evidence, the
  task-recognition head);
- K*_1: below it memorization comes first (G1 -> M1 -> M2), above it G2 does (G1 -> G2);
  K*_2: above it the model cannot store K task vectors and G2 persists; between the two G2
  is transient and gives way to M2 after Delta tau_K;
- tau_2Gen: the steps until G2 forms (not dependent on K); tau_1Mem(K) ∝ K^a: until
  memorization does;
- clocks: each mechanism's formation time measured in isolation (tau_G, tau_G|prev,
  tau_M2|prev(K), tau_M1(K)); the race: K*_1 where a memorising clock ties G2's;
- D_phi: the task vector's dimension (the task-recognition head can generalize when
  D_phi >~ C^2); anchor: a setting where a quantity was measured, scaled to others by the
  working forms;
- [R]: a reconstruction (a named option with a documented default; docs/icl_markov.md).
"""
