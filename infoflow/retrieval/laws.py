"""The cost laws every mechanism prices itself with: the symbols of the exponent and
Theorem 3's decoding exponent (the readout's state couples T0 positions:
alpha_decode(T0) = T0*d/E - c, c the option ``decode_offset``)."""

from __future__ import annotations

import sympy

from infoflow.retrieval.types import CostOptions

#: Sequence length, token width, embedding width, head width.
T, d, E, n = sympy.symbols("T d E n", positive=True)


def decode_exponent(positions: sympy.Expr | int, options: CostOptions) -> sympy.Expr:
    """Theorem 3 as summarised: decoding a state that couples ``positions`` positions."""
    return positions * d / E - options.decode_offset
