"""Spec -> predictions, by the predict function its family registers."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from infoflow.core.errors import SpecError
from infoflow.core.results import Result
from infoflow.families import family
from infoflow.spec import Spec, load_spec, revalidated


def predict(spec: Spec | str | Path | Mapping[str, Any], *, source: str | None = None) -> Result:
    """Predict everything the theory of ``spec``'s family says about it.

    ``spec`` is a loaded spec, or a path or dict that is loaded first (see
    :func:`infoflow.load_spec`; overrides go there). A spec with a ``sweep`` is predicted at
    its base values; :func:`infoflow.expand` gives its points. ``source`` names the spec in
    captions and JSON.
    """
    if isinstance(spec, str | Path):
        spec, source = load_spec(spec), source or str(spec)
    elif isinstance(spec, Mapping):
        spec = load_spec(spec)
    elif not isinstance(spec, Spec):
        kind = type(spec).__name__
        raise SpecError(
            "<spec>", [(None, f"a spec is a loaded spec, a path or a dict, not {kind}")]
        )
    if spec.changed_in_place():  # checked again, as load_spec would (an audit, 2026-12-07)
        spec = revalidated(spec, source or "<spec>")
    return family(spec.kind, source or "<spec>").predictor()(spec, source)
