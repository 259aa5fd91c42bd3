"""Rejudge every committed "rises with T" claim of the retrieval reports under the rule of
the night of 2026-12-07: where the longer length's ladder was still improving at its cap,
the rescue at that length with the same heads (twice the width and the steps) settles it
when it stopped above every seed of the shorter length
(docs/results/2026-12-07-triangle-rescue-rule-preregistered.md). Prints each claim's verdict
before and after, from the ladders and counts each report records; nothing is retrained.

Usage: python docs/results/2026-12-07-triangle-rescue-rejudge.py [REPORT.json ...]
(default: every report.json under docs/results)
"""

import importlib.util
import json
import sys
from pathlib import Path

from infoflow.validators.retrieval.judge_untrainable import rises

HERE = Path(__file__).parent
_spec = importlib.util.spec_from_file_location(
    "bounds_rejudge", HERE / "2026-12-07-verdict-bounds-rejudge.py"
)
bounds_rejudge = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bounds_rejudge)


def main(paths):
    for path in paths:
        report = json.loads(Path(path).read_text())
        for section in report.get("specs", []):
            if section.get("kind") != "retrieval" or "models" not in section:
                continue
            models = bounds_rejudge.models_of(section)
            rescue = next((m for m, _, _, r in models.values() if r.get("rescue")), None)
            judge = bounds_rejudge.judge_of(section, models)
            for claim in section["claims"]:
                if not claim["id"].startswith("rises_with_T:"):
                    continue
                shorter, longer = (models[k][0] for k in claim["id"].split(":")[1:])
                same = rescue and (rescue.seq_len, rescue.architecture()) == (
                    longer.seq_len,
                    longer.architecture(),
                )
                new = rises(judge, shorter, longer, rescue if same else None)
                after = new.verdict
                if same:
                    r, short = judge.learned(rescue), judge.learned(shorter)
                    after += (
                        f" (rescue {r.low:.3g}-{r.high:.3g}, still improving "
                        f"{judge.improving.get(rescue)}; T={shorter.seq_len} high {short.high:.3g})"
                    )
                print(f"{path}: {claim['id']} {claim['verdict']} -> {after}")


if __name__ == "__main__":
    main(sys.argv[1:] or sorted(map(str, Path("docs/results").glob("**/report.json"))))
