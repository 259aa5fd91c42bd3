"""Compare two validate reports claim by claim: verdicts, measured numbers, group names."""

import json
import sys
from pathlib import Path


def claims(path):
    r = json.loads(Path(path).read_text())
    out = {}
    for spec in r["specs"]:
        for c in spec["claims"]:
            out[(spec["name"], c["id"])] = c
    return r, out


a_r, a = claims(sys.argv[1])
b_r, b = claims(sys.argv[2])
print(
    "claims",
    len(a),
    len(b),
    "only old",
    sorted(set(a) - set(b)),
    "only new",
    sorted(set(b) - set(a)),
)
same_v = same_m = 0
for k in sorted(set(a) & set(b)):
    if a[k]["verdict"] == b[k]["verdict"]:
        same_v += 1
    else:
        print("VERDICT", k, a[k]["verdict"], "->", b[k]["verdict"])
    if json.dumps(a[k]["measured"], sort_keys=True) == json.dumps(b[k]["measured"], sort_keys=True):
        same_m += 1
    else:
        print(
            "MEASURED",
            k,
            json.dumps(a[k]["measured"])[:200],
            "|",
            json.dumps(b[k]["measured"])[:200],
        )
print("same verdicts", same_v, "same measured", same_m)
print("groups", sorted(a_r["throughput"]) == sorted(b_r["throughput"]))
