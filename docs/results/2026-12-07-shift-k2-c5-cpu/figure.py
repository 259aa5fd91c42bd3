"""The figure of docs/results/2026-12-07-shift-k2-c5.md, from this folder's report.json: the
share of seeds whose G2 came first at each K, at layer 1's full and half attention rate, with
each logistic fit, its K*_1 and 95% interval, and the race's K*_1 at each rate.

    python docs/results/2026-12-07-shift-k2-c5-cpu/figure.py
"""

import json
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

HERE = Path(__file__).parent
spec = json.loads((HERE / "report.json").read_text())["specs"][0]
races = {c["id"]: c for c in spec["claims"] if c["id"].endswith("/k1_star_race")}
fig, ax = plt.subplots(figsize=(7, 4))
for group, colour in zip(spec["groups"], ("tab:blue", "tab:red"), strict=True):
    rate = group["setting"]["training"].get("layer1_attention_lr", 1)
    m = group["measurement"]
    ks = sorted(int(k) for k in m["per_k"])
    share = [
        sum(o == "generalization" for o in m["per_k"][str(k)]["outcomes"].values())
        / len(m["per_k"][str(k)]["outcomes"])
        for k in ks
    ]
    fit = m["k1_fit"]
    label = f"rate {rate:g}: K*_1 = {fit['value']:.1f} ({fit['low']:.1f} to {fit['high']:.1f})"
    ax.plot(ks, share, "o", color=colour, label=label)
    grid = [ks[0] * (ks[-1] / ks[0]) ** (i / 200) for i in range(201)]
    curve = [1 / (1 + math.exp(-fit["slope"] * math.log(k / fit["value"]))) for k in grid]
    ax.plot(grid, curve, "-", color=colour)
    ax.axvspan(fit["low"], fit["high"], color=colour, alpha=0.12)
    race = races[f"{group['name']}/k1_star_race"]["predicted"]
    ax.axvline(race, color=colour, ls=":", label=f"rate {rate:g}: the race's K*_1 = {race:.1f}")
ax.set_xscale("log")
ax.minorticks_off()
ax.set_xticks([16, 23, 32, 45, 64, 91, 128], ["16", "23", "32", "45", "64", "91", "128"])
ax.set_xlabel("K (training chains)")
ax.set_ylabel("share of the 6 seeds whose G2 came first")
ax.set_title("k2-c5: slowing layer 1's attention to 0.5x, six seeds a K")
ax.legend(fontsize=7, loc="lower right")
fig.tight_layout()
fig.savefig(HERE / "shift.png", dpi=120)
print(f"wrote {HERE / 'shift.png'}")
