"""The partner peel with a soft mark: round 2 penalises the copied weights themselves."""

from dataclasses import replace

import infoflow
from infoflow.retrieval.schedule_to_circuit import circuit_of
from infoflow.validators.retrieval.construction import build

target = "max(kth_largest((dot(x[s], x[t]) for t in T if t != s), k=2) for s in T)"
arch = {"layers": 3, "heads": 1, "embed_dim": 40, "positional_encoding": True}
spec = infoflow.load_spec(
    {"kind": "retrieval", "target": target, "input_dim": 4, "seq_len": 8, "architecture": arch}
)
circuit = circuit_of(spec)


def soft(form):
    """The penalty read from the copied weights (p0.m1), not from the threshold's mark."""
    return replace(form, query="p0.m1") if form.query == "p0.taken" else form


heads = [replace(h, score=tuple(soft(f) for f in h.score)) for h in circuit.heads]
mlps = [m for m in circuit.mlps if m.kind != "threshold"]
soft_circuit = replace(circuit, heads=heads, mlps=mlps)
for beta in (100, 1000):
    sharp = build(spec, beta=beta, circuit=circuit).nmse
    blurred = build(spec, beta=beta, circuit=soft_circuit).nmse
    print(f"beta {beta}: threshold {sharp:.3g}, soft mark {blurred:.3g}")
