"""`[constraints]` fields that mean the same in several job kinds (train, serve, RL): one
declaration each, its bounds and description, so the kinds cannot drift apart."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from optimizer.inputs.jobs.limits import MAX_USD
from optimizer.inputs.jobs.strict import GpuName
from optimizer.vocabulary import PricingModel

__all__ = [
    "BudgetUsd",
    "AllowedNames",
    "AllowedGpuTypes",
    "GpuTypes",
    "PricingModels",
    "CloudAllowed",
    "JobsPerMonth",
    "DutyCycle",
]

#: `budget_usd` (train, RL): default None, no budget
BudgetUsd = Annotated[float | None, Field(gt=0, le=MAX_USD, description="spend at most this (USD)")]
#: what may be used, by name (`providers`, `regions` of train, serve and RL): at least one;
#: default None, every one. Each kind says which in its own words.
AllowedNames = Annotated[tuple[str, ...] | None, Field(min_length=1)]
#: the same of GPU types (ids or aliases: an RL job's and its pools' `*gpu_types`)
AllowedGpuTypes = Annotated[tuple[GpuName, ...] | None, Field(min_length=1)]
#: `gpu_types` (train, serve): default None, every GPU type
GpuTypes = Annotated[AllowedGpuTypes, Field(description="GPU types allowed (ids or aliases; old name: gpus)")]
#: `pricing` (train, RL; a serving job allows fewer models): default ("on_demand",)
PricingModels = Annotated[tuple[PricingModel, ...], Field(min_length=1, description="pricing models allowed")]
#: `cloud` (train, serve, RL): default True
CloudAllowed = Annotated[bool, Field(description="consider cloud offerings")]
#: `jobs_per_month` (train; a `[[capacity.owned]]` entry): how often the job runs, over which
#: a box's net capital is spread; default None (back to back). Each says it in its own words.
JobsPerMonth = Annotated[float | None, Field(gt=0, le=10_000)]
#: `duty_cycle` (the same two, instead of jobs_per_month): the share of the month the boxes are
#: busy; default None
DutyCycle = Annotated[float | None, Field(gt=0, le=1)]
