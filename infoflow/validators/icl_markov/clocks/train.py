"""Train a clock group with the shared loop (:mod:`~infoflow.validators.icl_markov.training`):
at each of its log-spaced evaluations, each member's KL to the truth on its test sets
(:meth:`ClockData.evaluate`); the group stops at the first evaluation where every member's
clock is final (:func:`~infoflow.validators.icl_markov.clocks.measure.settled`), since
training on changes nothing the race reads.
"""

from __future__ import annotations

import torch

from infoflow.validators.icl_markov.clocks.data import ClockData, ClockGroup
from infoflow.validators.icl_markov.clocks.measure import settled
from infoflow.validators.icl_markov.training import train_group
from infoflow.validators.protocol import Context


def train_clocks(group: ClockGroup, context: Context) -> None:
    """Train ``group`` until every member's clock is final (at most its steps), resuming
    from its checkpoint; the metrics of every evaluation go to the store."""
    torch.manual_seed(group.spec.seed)
    data = ClockData(group, context.device)
    rule = group.rule
    train_group(
        group, context, data, data.evaluate, lambda rows: all(settled(r, rule) for r in rows)
    )
