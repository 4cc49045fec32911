"""Re-plan a training job under way (issue 45): keep, grow, shrink or switch for the rest.

The rows are the planner's candidates for the REMAINING tokens (hours at the job's confidence,
start-up included). The job's own progress says how fast it really runs: its slowness
r = measured ÷ predicted step time (the log's step time when given, else the elapsed hours over
the predicted hours of the tokens done). Each option's hours for the rest:

    keep           r × running hours of the current row + conversion     (no restart)
    grow / shrink  restart + r × running hours of the row + conversion   (same offering,
                   other count; a grow also pays its added instances' start-up, which runs
                   while the current ones keep training, so it costs money, not hours)
    switch         start-up + restart + transfer + running hours + conversion (another
                   offering; r applies to the same GPU type, else the row's hours at the
                   job's confidence)

with running = point hours − fixed hours (start-up and the final conversion, which do not scale
with the tokens: solve/train/confidence.fixed_hours) and transfer = checkpoint GB × 8 / Gbit/s
when the provider or region changes, whose egress (checkpoint GB × the current provider's
internet egress price, pricing_data/provider_storage.csv) is added to the cost. An option's
`switch_usd` is what switching costs: that egress plus the instance-hours it pays for while
nothing trains (restart, transfer, a new cluster's or added instances' start-up).
The cheapest option within the remaining deadline and budget is the answer (ties: keep first).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from optimizer.pricing.offering import cost_usd
from optimizer.solve.cpsat.scale import to_cents
from optimizer.solve.train.candidate import Candidate
from optimizer.solve.train.confidence import conversion_hours, fixed_hours, point_hours, startup_hours
from optimizer.units import GB, MINUTES_PER_HOUR, SECONDS_PER_HOUR

__all__ = ["SwitchCosts", "Remaining", "ReplanOption", "replan_options", "choose", "slowness"]

Kind = Literal["keep", "grow", "shrink", "switch"]
#: the order ties are broken in (keeping the job running first)
KINDS: tuple[Kind, ...] = ("keep", "grow", "shrink", "switch")
_BITS_PER_BYTE = 8


@dataclass(frozen=True)
class SwitchCosts:
    """What moving a job costs: the checkpoint, how fast it travels, and a restart."""

    checkpoint_gb: float
    transfer_gbps: float
    restart_minutes: float
    egress_usd_per_gb: float  # the current provider's internet egress price (0: unknown)

    @property
    def transfer_h(self) -> float:
        """Hours to copy one checkpoint: GB × 8 bits / Gbit/s."""
        return self.checkpoint_gb * GB * _BITS_PER_BYTE / (self.transfer_gbps * 1e9) / SECONDS_PER_HOUR

    @property
    def restart_h(self) -> float:
        return self.restart_minutes / MINUTES_PER_HOUR

    @property
    def egress_usd(self) -> float:
        return self.checkpoint_gb * self.egress_usd_per_gb


@dataclass(frozen=True)
class Remaining:
    """What is left of the job: hours to its deadline and dollars of its budget (None: none)."""

    deadline_h: float | None
    budget_usd: float | None


@dataclass(frozen=True)
class ReplanOption:
    kind: Kind
    row: Candidate
    hours: float  # wall hours to finish the rest
    cost_usd: float  # to finish the rest, switching included
    switch_usd: float  # of which: switching (egress + instance-hours paid while nothing trains)
    switch_h: float  # of which: restart + transfer hours
    measured: bool  # hours from the job's measured speed (same GPU type), not the band
    egress_usd: float = 0.0  # of switch_usd: the checkpoint's egress when the place changes

    def fits(self, remaining: Remaining) -> bool:
        late = remaining.deadline_h is not None and self.hours > remaining.deadline_h
        over = remaining.budget_usd is not None and self.cost_usd > remaining.budget_usd
        return not late and not over


def slowness(current: Candidate, done_fraction_of_rest: float, elapsed_h: float) -> float | None:
    """r from progress alone: elapsed hours (less one start-up) over the predicted running hours
    of the tokens done (the current row's running point hours — its fixed start-up and
    conversion left out, as they do not grow with the tokens — × tokens done ÷ tokens left);
    None when no step has been timed yet (no token done, or still inside the start-up)."""
    start = startup_hours(current)
    if done_fraction_of_rest <= 0 or elapsed_h <= start:
        return None
    return (elapsed_h - start) / ((point_hours(current) - fixed_hours(current)) * done_fraction_of_rest)


def _option(
    kind: Kind, row: Candidate, r: float | None, costs: SwitchCosts, moved: bool, added_instances: int = 0
) -> ReplanOption:
    """One option's hours and cost (module doc); `r` None: the row's hours at its confidence."""
    fixed, start = fixed_hours(row), startup_hours(row)
    running = (point_hours(row) - fixed) * r if r is not None else row.hours - fixed
    if kind == "keep":
        switch_h = 0.0
    elif kind == "switch":
        switch_h = costs.restart_h + (costs.transfer_h if moved else 0.0)
    else:  # grow or shrink: the same offering restarts
        switch_h = costs.restart_h
    idle_h = switch_h + (start if kind == "switch" else 0.0)  # the hours nothing trains
    hours = idle_h + running + conversion_hours(row)
    cost = cost_usd(row.offering, row.instances, hours)
    # the same place pays no new data charge; another place pays its own (dataset moved there)
    usd = cost.total_usd if kind == "switch" else cost.running_usd + cost.capital_usd
    # instance-hours at the hourly price (a share of the bill, not rounded to its terms)
    idle_usd = row.offering.usd_per_hour * row.instances * idle_h
    added_usd = row.offering.usd_per_hour * added_instances * start
    egress = costs.egress_usd if moved else 0.0
    total_usd = usd + added_usd + egress
    switch_usd = egress + idle_usd + added_usd
    return ReplanOption(kind, row, hours, total_usd, switch_usd, switch_h, r is not None, egress)


def replan_options(
    rows: Sequence[Candidate], current: Candidate, r: float, costs: SwitchCosts
) -> list[ReplanOption]:
    """Every row as an option for the rest (module doc)."""
    here = current.offering
    out = []
    for row in rows:
        off = row.offering
        if off == here:
            kind: Kind = (
                "keep"
                if row.instances == current.instances
                else ("grow" if row.instances > current.instances else "shrink")
            )
            added = max(0, row.instances - current.instances)
            out.append(_option(kind, row, r, costs, moved=False, added_instances=added))
            continue
        moved = (off.provider, off.region) != (here.provider, here.region)
        same_gpu = off.gpu_id == here.gpu_id
        out.append(_option("switch", row, r if same_gpu else None, costs, moved))
    return out


def choose(options: Sequence[ReplanOption], remaining: Remaining) -> ReplanOption | None:
    """The cheapest option that fits (whole cents; ties: the kind order, then fewer hours)."""
    fitting = [o for o in options if o.fits(remaining)]
    return min(fitting, key=lambda o: (to_cents(o.cost_usd), KINDS.index(o.kind), o.hours), default=None)


def best_per_kind(options: Sequence[ReplanOption], remaining: Remaining) -> dict[str, ReplanOption]:
    """The cheapest fitting option of each kind, else its fastest (to show why it loses)."""
    out: dict[str, ReplanOption] = {}
    for kind in KINDS:
        mine = [o for o in options if o.kind == kind]
        if mine:
            out[kind] = choose(mine, remaining) or min(mine, key=lambda o: (o.hours, o.cost_usd))
    return out
