"""A finished validation as an object, for notebooks and scripts: report.json (what
``validate`` returns, or a run folder's file) -> :class:`Report`, its claims typed, a table
of one row per claim (Markdown, HTML, a DataFrame), its families' plots as Figures. Imports
no torch: a report is read where it was not trained (only :meth:`Report.figures` loads the
families' validators)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from infoflow.core.errors import SpecError
from infoflow.core.files import is_folder, read_json
from infoflow.core.tables import Tabular
from infoflow.validators.claims import CLAIM_COLUMNS, KINDS, VERDICTS, Claim, tally

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: A row of the report's table: the spec it belongs to, then the claim's columns.
COLUMNS = ("spec", *CLAIM_COLUMNS)
SHOWN = ("spec", "kind", "claim", "verdict", "measured", "tolerance")
#: What every claim in a report has (older reports may lack an id, a kind and a reason).
REQUIRED = ("claim", "predicted", "measured", "tolerance", "verdict")


@dataclass(frozen=True)
class Report(Tabular):
    """A validation report: ``data`` is report.json's content (docs/validate.md)."""

    data: dict[str, Any]

    def __post_init__(self) -> None:
        """A SpecError naming the field when ``data`` is no report (a KeyError or TypeError
        came later, from repr or a table: an audit, 2026-12-07)."""
        problem = _problem(self.data)
        if problem:
            raise SpecError("<report>", [problem])

    def __repr__(self) -> str:
        """A line, not report.json's hundreds of kilobytes."""
        claims = sum(len(spec["claims"]) for spec in self.data["specs"])
        specs = ", ".join(self.spec_names())
        return f"Report(scale={self.data.get('scale')!r}, specs=[{specs}], claims={claims})"

    @property
    def claims(self) -> list[Claim]:
        """Every claim of every spec, in the report's order."""
        return [Claim.from_json(c) for spec in self.data["specs"] for c in spec["claims"]]

    def section(self, name: str) -> dict[str, Any]:
        """One spec's part (its family's record and its claims), by the spec's name."""
        for spec in self.data["specs"]:
            if spec["name"] == name:
                return spec
        raise KeyError(f"no spec {name!r}; the report has {', '.join(self.spec_names())}")

    def figures(self) -> dict[str, Figure]:
        """The plots ``validate`` draws from this report, unsaved, by file name (each
        family's ``figures``, e.g. ``ladders.png``, ``NAME-codec.png``, ``NAME-phases.png``):
        to show in a notebook or save anywhere. Needs matplotlib and the validators (torch)."""
        from infoflow.families import family

        specs = self.data["specs"]
        found: dict[str, Figure] = {}
        for kind in dict.fromkeys(spec.get("kind") for spec in specs):
            mine = [spec for spec in specs if spec.get("kind") == kind]
            if kind is None:
                continue
            try:
                found |= family(kind).load_validator().figures(mine)
            except ModuleNotFoundError as exc:  # torch or matplotlib: the validate extra
                why = f"the {kind} plots need {exc.name}: pip install -e '.[validate]'"
                raise SpecError("<report>", [(None, why)]) from None
            except (KeyError, TypeError) as exc:  # a record of another version's shape
                why = f"cannot draw the {kind} plots: its records lack {exc} (an older report?)"
                raise SpecError("<report>", [("specs", why)]) from None
        return found

    def spec_names(self) -> list[str]:
        return [spec["name"] for spec in self.data["specs"]]

    def rows(self) -> list[dict[str, Any]]:
        """One row per claim: the spec's name, then the claim's columns."""
        return [
            {"spec": spec["name"], **{key: claim.get(key) for key in CLAIM_COLUMNS}}
            for spec in self.data["specs"]
            for claim in spec["claims"]
        ]

    def headers(self) -> tuple[str, ...]:
        return COLUMNS

    def shown(self) -> tuple[str, ...]:
        return SHOWN

    def caption(self) -> str:
        data = self.data
        return (
            f"infoflow validate: scale {data.get('scale')} on {data.get('device')}, "
            f"{data.get('started')} to {data.get('finished')}"
        )

    def notes(self) -> tuple[str, ...]:
        """The verdicts counted by kind of claim, and the specs not validated."""
        counts = tally([claim for spec in self.data["specs"] for claim in spec["claims"]])
        verdicts = "; ".join(
            f"{kind}: " + ", ".join(f"{n} {verdict}" for verdict, n in found.items())
            for kind, found in counts.items()
        )
        skipped = [
            f"{s['spec']} not validated: {s['reason']}" for s in self.data.get("skipped", [])
        ]
        return (f"Verdicts by kind of claim: {verdicts or 'no claims'}.", *skipped)


def load_report(path: str | Path) -> Report:
    """The report in ``path``: a run folder (``--out``) or its report.json. A SpecError names
    the file and the field when it is not one."""
    if not isinstance(path, str | Path):
        kind = type(path).__name__
        raise SpecError("<report>", [(None, f"a report is a run folder or its path, not {kind}")])
    path = Path(path)
    file = path / "report.json" if is_folder(path) else path
    data = read_json(file, "report")
    try:
        return Report(data)
    except SpecError as exc:  # named by its file
        raise SpecError(str(file), exc.problems) from None


def _problem(data: Any) -> tuple[str | None, str] | None:
    """What makes ``data`` no report (a field and a message), or None."""
    if not isinstance(data, dict) or not isinstance(data.get("specs"), list):
        return "specs", "a report is an object with a list of specs (infoflow validate's)"
    for i, spec in enumerate(data["specs"]):
        if not isinstance(spec, dict) or not isinstance(spec.get("claims"), list):
            return f"specs[{i}].claims", "a spec's part has a name and a list of claims"
        if not isinstance(spec.get("name"), str):
            return f"specs[{i}].name", "a spec's part has a name (a string)"
        for j, claim in enumerate(spec["claims"]):
            where = f"specs[{i}].claims[{j}]"
            missing = [k for k in REQUIRED if not isinstance(claim, dict) or k not in claim]
            if missing:
                return f"{where}.{missing[0]}", "required field is missing"
            if claim["verdict"] not in VERDICTS:
                return f"{where}.verdict", f"not one of {', '.join(VERDICTS)}"
            if claim.get("kind", "") not in ("", *KINDS):
                return f"{where}.kind", f"not one of {', '.join(KINDS)}"
    return None


def summary_line(report: dict) -> str:
    """The verdict counts, the paper's claims first: ``paper 3 confirmed, 1 refuted, 0
    inconclusive; engineering ...``."""
    return (
        "; ".join(
            f"{kind} " + ", ".join(f"{counts[v]} {v}" for v in VERDICTS)
            for kind, counts in report["by_kind"].items()
        )
        or "no claims"
    )
