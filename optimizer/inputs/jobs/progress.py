"""`[progress]`: how far a running training job has got, for `ccopt replan` (issue 45).

Switching costs are the checkpoint's transfer over the network and a restart; their two
guessed figures (transfer rate, restart minutes) are stated here, marked GUESS and overridable
in the table itself.
"""

from __future__ import annotations

from pydantic import Field

from optimizer.inputs.jobs.common import MAX_DAYS, MAX_TOKENS, MAX_USD, StrictModel
from optimizer.inputs.jobs.limits import MAX_INSTANCES
from optimizer.vocabulary import PricingModel

__all__ = ["Progress", "TRANSFER_GBPS_GUESS", "RESTART_MINUTES_GUESS"]

#: GUESS: sustained rate of copying a checkpoint between providers over the internet (object
#: storage to object storage, many parallel streams); the job's [progress] transfer_gbps overrides
TRANSFER_GBPS_GUESS = 5.0
#: GUESS: minutes to relaunch a job from a checkpoint on a cluster already running the image
#: (scheduler, process groups, loading the checkpoint, data-loader state); a new cluster also
#: pays its own start-up (model/goodput.py); [progress] restart_minutes overrides
RESTART_MINUTES_GUESS = 20.0


class Progress(StrictModel):
    """`[progress]`: a training job under way — what is done, on what, and at what cost."""

    tokens_done: float = Field(ge=0, le=MAX_TOKENS, description="tokens trained so far")
    elapsed_hours: float = Field(gt=0, le=MAX_DAYS * 24, description="wall hours since the job started")
    spent_usd: float | None = Field(
        default=None,
        ge=0,
        le=MAX_USD,
        description="spent so far (USD); default: the current offering's price × instances × elapsed hours",
    )
    provider: str = Field(min_length=1, description="provider the job runs on now (as in `ccopt prices`)")
    instance: str = Field(min_length=1, description="instance type it runs on now")
    region: str | None = Field(default=None, min_length=1, description="its region (default: any)")
    pricing: PricingModel = Field(default="on_demand", description="its pricing model")
    instances: int = Field(gt=0, le=MAX_INSTANCES, description="instances it runs on now")
    measured_step_time_s: float | None = Field(
        default=None,
        gt=0,
        le=86_400,
        description="the step time the job's log shows "
        "(default: inferred from tokens_done and elapsed_hours)",
    )
    checkpoint_gb: float | None = Field(
        default=None,
        gt=0,
        le=1e7,
        description="one checkpoint's size, GB (default: weights + optimizer state, model/host.py)",
    )
    transfer_gbps: float = Field(
        default=TRANSFER_GBPS_GUESS,
        gt=0,
        le=10_000,
        description="checkpoint transfer rate between providers, Gbit/s (GUESS 5)",
    )
    restart_minutes: float = Field(
        default=RESTART_MINUTES_GUESS,
        ge=0,
        le=10_000,
        description="minutes to relaunch from a checkpoint (GUESS 20)",
    )
