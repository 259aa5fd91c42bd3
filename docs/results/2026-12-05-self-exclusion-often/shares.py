"""The share of random draws on which the pair (s, s) that s != t leaves out decides a max or
min over two tokens, beside the engine's class for the score (diagonal.role): T = 8, 16, 32,
d = 4, x ~ N(0, I), 4,000 draws each (run from the repository root:
python docs/results/2026-12-05-self-exclusion-often/shares.py [--fresh])."""

import sys

import numpy as np

from infoflow.retrieval import diagonal
from infoflow.retrieval.algebra import EXTREMUM, terms
from infoflow.retrieval.text_to_expression import parse_target

D, DRAWS = 4, 4000
rng = np.random.default_rng(0)
A, B = rng.normal(size=(D, D)), rng.normal(size=(D, D))
q = np.ones(D)
PAIR = "for s in T for t in T if s != t"


def norm(v):
    return np.linalg.norm(v, axis=-1)


def sq(v):
    return (v**2).sum(-1)


#: (target, its score g(X) as a [T, T] matrix of g(x(s), x(t))) that formed the rule
FORMED = [
    (f"min(dot(x[s], x[t]) {PAIR})", lambda X: X @ X.T),
    (f"max(-dot(x[s], x[t]) {PAIR})", lambda X: -(X @ X.T)),
    (
        f"max(dot(q, x[s]) + dot(q, x[t]) - dot(x[s], x[t]) {PAIR})",
        lambda X: (X @ q)[:, None] + (X @ q)[None, :] - X @ X.T,
    ),
    (
        f"max(dot(q, x[s]) - dot(q, x[t]) + dot(x[s], x[t]) {PAIR})",
        lambda X: (X @ q)[:, None] - (X @ q)[None, :] + X @ X.T,
    ),
    (f"min(norm(x[s] + x[t]) {PAIR})", lambda X: norm(X[:, None] + X[None, :])),
    (f"max(norm(x[s] - 2 * x[t]) {PAIR})", lambda X: norm(X[:, None] - 2 * X[None, :])),
    (f"max(bilinear(x[s], A, x[t]) {PAIR})", lambda X: X @ A @ X.T),
    (f"min(bilinear(x[s], A, x[t]) {PAIR})", lambda X: X @ A @ X.T),
]
#: scores not seen when the rule was written (docs/results/2026-12-05-self-exclusion-often.md)
FRESH = [
    (f"max(norm(2 * x[s] - x[t]) {PAIR})", lambda X: norm(2 * X[:, None] - X[None, :])),
    (f"min(norm(x[s] - 3 * x[t]) {PAIR})", lambda X: norm(X[:, None] - 3 * X[None, :])),
    (f"min(sqnorm(x[s] + x[t]) {PAIR})", lambda X: sq(X[:, None] + X[None, :])),
    (f"max(sqnorm(x[s] - 3 * x[t]) {PAIR})", lambda X: sq(X[:, None] - 3 * X[None, :])),
    (
        f"min(3 * dot(x[s], x[t]) - dot(q, x[s]) - dot(q, x[t]) {PAIR})",
        lambda X: 3 * X @ X.T - (X @ q)[:, None] - (X @ q)[None, :],
    ),
    (
        f"max(sqnorm(x[s]) + sqnorm(x[t]) - 4 * dot(x[s], x[t]) {PAIR})",
        lambda X: sq(X)[:, None] + sq(X)[None, :] - 4 * X @ X.T,
    ),
    (f"max(bilinear(x[s], B, x[t]) {PAIR})", lambda X: X @ B @ X.T),
    (
        f"min(bilinear(x[s], B, x[t]) + dot(x[s], x[t]) {PAIR})",
        lambda X: X @ B @ X.T + X @ X.T,
    ),
]


def engine_class(target: str) -> str:
    ((_, reduce),) = terms(parse_target(target))
    return diagonal.role(EXTREMUM[reduce.op], terms(reduce.body), ("s", "t"))


def share(target: str, g, seq_len: int) -> float:
    direction = 1 if target.startswith("max") else -1
    hit = 0
    for _ in range(DRAWS):
        G = direction * g(rng.normal(size=(seq_len, D)))
        off = G.copy()
        np.fill_diagonal(off, -np.inf)
        hit += G.max() > off.max() + 1e-12
    return hit / DRAWS


if __name__ == "__main__":
    rows = FRESH if "--fresh" in sys.argv else FORMED
    classes_only = "--classes" in sys.argv
    for target, g in rows:
        found = engine_class(target)
        if classes_only:
            print(f"{found:12s} {target}")
            continue
        shares = [share(target, g, t) for t in (8, 16, 32)]
        print(f"{found:12s} " + " ".join(f"{s:.4f}" for s in shares) + f"  {target}")
