"""The icl_markov validator: trains small transformers on mixtures of Markov chains to check
what :mod:`infoflow.icl_markov` predicts (theory note ``icl_markov.md``). It runs three
experiments, each a subpackage with its own stages (data, training, measurement, claims,
report):

- ``ksweep/``: the K sweep. Many models at K = 1, 2, 4, ... training chains, stacked and
  trained together; each member's phase over training, then K*_1, K*_2 and tau_2Gen across K
  (``data``, ``train``, ``phases``, ``thresholds`` with ``logistic``, ``claims``, ``judge``,
  ``report``, ``plots``);
- ``clocks/``: the clock runs. Each mechanism's formation time measured in isolation, then
  the race of those clocks, which predicts K*_1 without any K*_1 data (``data``, ``train``,
  ``measure``, ``judge`` (the race and its claims), ``report``, ``plots``);
- ``decoder/``: the decoder alone. The second MLP trained by itself: its capacity against
  K*_2, and the task vector's dimension D_phi against C^2 (``data``, ``train``, ``judge``,
  ``claims``, ``report``).

What they share sits here: ``validator`` (the protocol object, which hands each stage to the
experiments), ``experiment`` (the scales and ``plan``: a spec -> its experiments' groups),
``references`` (the reference predictors), ``criterion`` (the pre-registered statistic that
decides which mechanism formed, for the K sweep and the clocks alike, and its ceiling),
``model`` (the stacked GPT of the K sweep and the clocks), ``training`` (their batches and
training loop), ``estimate`` and ``ceiling`` (what ``infoflow plan`` prints) and ``report``
(the experiments' parts of report.md, in order). The clocks read the
K sweep (the race is judged against its K*_1, and drawn and written as its groups are);
nothing else crosses between experiments.

Glossary:

- C: the number of states of a chain; K: the number of training chains (the data
  diversity), K = inf a fresh chain per sequence.
- member, group: one model (a K and a seed); the members trained together as one stack.
- G1: in-context unigram (1-point generalization), Laplace-smoothed counts of the context.
- G1_park: Park et al.'s G1, the stationary distribution of the smoothed in-context bigram.
- G1_bayes: G1 as Bayes, a posterior over fresh chains from unigram evidence; the plateau.
- G2: in-context bigram (2-point generalization, the statistical induction head).
- M1: the posterior over the K training chains from unigram evidence, predicting their rows.
- M1_unigram: the same posterior predicting the chains' stationary distributions.
- M2: the posterior over the K chains from bigram evidence (task recognition), their rows.
- criterion: the spec's ``options.criterion``, fixed before the run: ``projection`` (the
  weights of the convex mixture of U, G1, G2, M1 and M2 closest to the model; a kind has
  formed at WEIGHT 1/2) or ``gap`` (the rules below that name GAP and MARGIN).
- U: the uniform distribution, the plateau's other reference in the projection.
- kind: plateau (U, G1), generalizing (G2), memorizing (M1, M2).
- separability: how far a reference is from the midpoint with the nearest reference of
  another kind, on the run's data; below the spec's tolerance the kind is untestable there.
- misfit: KL(model || the projection's mixture): what the references do not explain.
- previous-token head: layer 1's largest per-head mean attention from t to t - 1; formed at
  PREVIOUS_FORMED 1/2.
- phase: with ``projection``, the heaviest reference of the kind at WEIGHT, else
  undetermined; with ``gap``, the reference nearest the model by MARGIN, else undetermined.
- ID, OOD: test sequences of a member's own chains; of one freshly drawn chain each.
- GAP: a model memorizes when its ID KL to the truth is at most GAP x its OOD KL.
- MARGIN: how clearly nearer one phase reference must be than every other to be called.
- ceiling: per K, whether the data can show the kinds apart (projection: separability; gap:
  whether even a perfect M2 memorizes by GAP); where not, untestable.
- separation: how far two references are from each other on the same test data.
- outcome: which came first at a K, generalization (G2) or memorization; else undecided.
- K*_1: the K above which G2 forms before memorization (below it memorization wins).
- K*_2: the K above which G2 persists; between K*_1 and K*_2 it gives way to M2.
- tau_2Gen: steps until the G2 phase first appears (the median over the K that generalize).
- tau_1Mem(K): steps until the model first memorizes, at K.
- clock: a mechanism's formation time on a model where only it can form: steps until its
  kind has formed by the criterion (gap: halfway from the plateau to its Bayes level).
- tau_G: G2's clock on the full model at K = inf.
- tau_G|prev: G2's clock with layer-1 attention hard-wired to the previous token.
- tau_M2|prev(K): M2's clock with that head and layer-2 attention uniform, on K chains.
- tau_M1(K): M1's clock with layer-1 attention on the current token only, on K chains.
- tau_prev: tau_G - tau_G|prev, the time to form the previous-token head.
- race: K*_1 where the fastest memorizing path (tau_M1, or tau_prev + tau_M2|prev) ties tau_G.
- r: layer 1's attention trained at r x the learning rate, an intervention on tau_prev.
- D_phi: the task vector's dimension, the numbers that code a chain for the decoder.
"""
