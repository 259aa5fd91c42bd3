"""infoflow: predict what a transformer needs for a task, then check it by experiment.

The public API is small and loads lazily, so that ``infoflow --help`` pays for no import it
does not use::

    import infoflow
    spec = infoflow.load_spec(infoflow.specs.path("looped_kv/ouro-1.4b.json"))
    result = infoflow.predict(spec)
    print(result.predictions["kv_bytes_per_token"].value)  # 786432

- ``load_spec(path_or_dict, overrides)``: a validated spec (``SpecError`` on bad input);
  ``expand(spec)``: a sweep's points; ``spec_schema()``: the specs' JSON schema;
- ``predict(spec)``: a ``Result`` of ``Prediction`` s, each with its value, bound and
  provenance; ``check_family(kind)``: a family's consistency checks;
- ``load_report(run_folder)``: a validate run's ``Report`` (its claims and verdicts);
- ``specs.path(name)``, ``specs.names()``: the bundled specs, from any working directory.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

from infoflow.core.version import __version__

_EXPORTS = {
    "check_family": "infoflow.checks",
    "load_spec": "infoflow.spec",
    "expand": "infoflow.spec",
    "spec_schema": "infoflow.spec",
    "SpecError": "infoflow.core.errors",
    "predict": "infoflow.predictor",
    "Prediction": "infoflow.core.results",
    "Result": "infoflow.core.results",
    "load_report": "infoflow.validators.run_report",
    "Report": "infoflow.validators.run_report",
}

__all__ = [
    "Prediction",
    "Report",
    "Result",
    "SpecError",
    "__version__",
    "check_family",
    "expand",
    "load_report",
    "load_spec",
    "predict",
    "spec_schema",
    "specs",
]

if TYPE_CHECKING:
    from infoflow.checks import check_family
    from infoflow.core.errors import SpecError
    from infoflow.core.results import Prediction, Result
    from infoflow.predictor import predict
    from infoflow.spec import expand, load_spec, spec_schema
    from infoflow.validators.run_report import Report, load_report


def __getattr__(name: str) -> Any:
    if name == "specs":  # the bundled specs: infoflow.specs.path("retrieval/pairwise-min.json")
        return import_module("infoflow.specs")
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'infoflow' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The public names, the lazily loaded ones too (tab completion, ``dir(infoflow)``)."""
    return sorted({*__all__, *(name for name in globals() if name.startswith("__"))})
