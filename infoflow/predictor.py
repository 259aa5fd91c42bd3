"""Spec -> predictions, dispatched on the spec's kind."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from infoflow.results import Result
from infoflow.spec import Spec, load_spec


def predict(spec: Spec | str | Path | Mapping[str, Any], source: str | None = None) -> Result:
    """Predict everything the theory of ``spec``'s family says about it.

    ``spec`` is a loaded spec, or a path or dict that is loaded first (see
    :func:`infoflow.load_spec`). A spec with a ``sweep`` is predicted at its base values;
    :func:`infoflow.expand` gives its points.
    """
    if isinstance(spec, str | Path):
        spec, source = load_spec(spec), str(spec)
    elif isinstance(spec, Mapping):
        spec = load_spec(spec)
    if spec.kind == "looped_kv":
        from infoflow.looped_kv.predict import predict_looped_kv

        return predict_looped_kv(spec, source)
    if spec.kind == "retrieval":
        from infoflow.retrieval.predict import predict_retrieval

        return predict_retrieval(spec, source)
    if spec.kind == "icl_markov":
        from infoflow.icl_markov.predict import predict_icl_markov

        return predict_icl_markov(spec, source)
    raise ValueError(f"no predictor for kind {spec.kind!r}")
