"""Write the bundled retrieval specs: the InfoFlow papers' targets and experiment settings.

Run from the repository root: ``python specs/retrieval/generate.py``. Settings the papers
do not publish (E for the intrinsic-dimension and depth-separation runs, d for the pairwise
minimum and k-th largest) are choices made here, said in each description.
"""

import json
from pathlib import Path

HERE = Path(__file__).parent
PAIRWISE_MIN = "min(dot(x[s], x[t]) for s in T for t in T if s != t)"
INTRINSIC = "sum(max(bilinear(x[s], A[i], x[t]) for s in T for t in T) for i in range(D))"
TRIANGLE = "min(norm(x[a] + x[b] + x[c]) for a in T for b in T for c in T)"
KTH = "kth_largest((dot(q, x[t]) for t in T), k=2)"
POSITIONS = "x[1] + x[2] + x[3]"
INDUCTION = "argmax(dot(x[t-1], x[T]) for t in T)"
WINDOW = "max(dot(x[s], x[t]) for s in T for t in T if s < t and t - s <= 4)"


def write(name: str, spec: dict) -> None:
    (HERE / f"{name}.json").write_text(json.dumps({"kind": "retrieval", **spec}, indent=2) + "\n")


def main() -> None:
    for name, spec in {
        **_depth_and_kth(),
        **_intrinsic(),
        **_paper_settings(),
        **_positions(),
    }.items():
        write(name, spec)


def _depth_and_kth() -> dict[str, dict]:
    """Theorem 1's pairwise minimum and Theorem 2's second largest, over T."""
    return {
        "pairwise-min": {
            "description": "Depth separation (Theorem 1): the pairwise minimum with one layer "
            "against two, one head each, over T. d = 4 and E = 64 are choices made here.",
            "target": PAIRWISE_MIN,
            "input_dim": 4,
            "seq_len": 64,
            "architecture": {"layers": 2, "heads": 1, "embed_dim": 64},
            "sweep": {"architecture.layers": [1, 2], "seq_len": [8, 16, 32, 64]},
        },
        "kth-largest": {
            "description": "Second-largest retrieval (Theorem 2): one head in one layer costs "
            "(T-k-1)/(n+1); k layers make it efficient. d = 4, E = 32 are choices made here.",
            "target": KTH,
            "input_dim": 4,
            "seq_len": 16,
            "architecture": {"layers": 1, "heads": 1, "embed_dim": 32},
            "sweep": {"architecture.layers": [1, 2], "seq_len": [8, 16, 32, 64]},
        },
    }


def _intrinsic() -> dict[str, dict]:
    """Intrinsic dimension at D = 2..6, heads (D, D) against one head fewer."""
    return {
        f"intrinsic-dimension-D{D}": {
            "description": f"Intrinsic dimension, D = {D}: two layers with heads (D, D), "
            "(D-1, D), (D, D-1); d = 4, T = 64 as in the paper; E = 60 (divisible by every "
            "head count 1..6) is a choice made here (the paper does not publish it).",
            "target": INTRINSIC,
            "params": {"D": D},
            "input_dim": 4,
            "seq_len": 64,
            "architecture": {"layers": 2, "heads": [D, D], "embed_dim": 60},
            "sweep": {"architecture.heads": [[D, D], [D - 1, D], [D, D - 1]]},
        }
        for D in range(2, 7)
    }


def _paper_settings() -> dict[str, dict]:
    """The triangle center and the specific position."""
    return {
        "triangle-center": {
            "description": "Triangle center: d = 2, x ~ N(0, 2I) clamped to norm [0.2, 4], "
            "T in {3, 8, 16, 32, 64}, heads (2, 2) and (4, 4), E in {24, 48}, as in the paper.",
            "target": TRIANGLE,
            "input_dim": 2,
            "seq_len": 64,
            "data": {"std": 1.4142135623730951, "norm_clamp": [0.2, 4.0]},
            "architecture": {"layers": 2, "heads": [2, 2], "embed_dim": 24},
            "sweep": {
                "seq_len": [3, 8, 16, 32, 64],
                "architecture.heads": [[2, 2], [4, 4]],
                "architecture.embed_dim": [24, 48],
            },
        },
        "specific-position": {
            "description": "x(1) + x(2) + x(3) with T = 10, one layer, one head, with and without "
            "positional encoding; the readout should put about 1/3 of its attention on each.",
            "target": POSITIONS,
            "input_dim": 4,
            "seq_len": 10,
            "architecture": {
                "layers": 1,
                "heads": [1],
                "embed_dim": 32,
                "positional_encoding": True,
            },
            "sweep": {"architecture.positional_encoding": [True, False]},
        },
    }


def _positions() -> dict[str, dict]:
    """The induction head and a sliding window: targets that read positions."""
    return {
        "induction-head": {
            "description": "The induction head (Sanford et al. 2024; theory note, positions), "
            "as a position: the position of the token after the best match, the token whose "
            "predecessor matches the last token. Two layers with positional encoding: the "
            "last token in layer 1, the match in layer 2, heads (1, 1); the position after "
            "the match is the match's position plus one, which positional encoding gives "
            "with no head of its own. Copying the token after the match (the classic "
            "induction head's output, which the target language does not write) would need "
            "a previous-token head as well: heads (2, 1), as a score reading x[t-1] and x[t] "
            "is planned. d = 4, T = 16, E = 32 are choices made here.",
            "target": INDUCTION,
            "input_dim": 4,
            "seq_len": 16,
            "architecture": {
                "layers": 2,
                "heads": [1, 1],
                "embed_dim": 32,
                "positional_encoding": True,
            },
        },
        "sliding-window": {
            "description": "A sliding-window retrieval (the DSL's windows): the best pair of "
            "tokens within the causal window of 4, as a sliding-window model sees them. The "
            "window reads positions: a masked pairwise retrieval, two layers with one head "
            "each with positional encoding, impossible without it. d = 4, T = 16, E = 32 are "
            "choices made here.",
            "target": WINDOW,
            "input_dim": 4,
            "seq_len": 16,
            "architecture": {
                "layers": 2,
                "heads": [1, 1],
                "embed_dim": 32,
                "positional_encoding": True,
            },
            "sweep": {"architecture.positional_encoding": [True, False]},
        },
    }


if __name__ == "__main__":
    main()
