"""A job file's [calibration] run is a ConfigRequest, the one shape of a configuration: the same
request `ccopt calibrate` builds from the equivalent flags, split the same way, storing the
same point (optimizer/inputs/calibration.py calibration_request, inputs/request_layout.py)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from optimizer.cli import app
from optimizer.errors import ConfigError
from optimizer.inputs.calibration import assumptions_for_job, base_assumptions, calibration_request
from optimizer.inputs.calibration_store import load_points
from optimizer.inputs.jobs.train import Job
from optimizer.inputs.request import ConfigRequest, request_from_options
from optimizer.inputs.request_layout import request_gpus, request_layout
from optimizer.model.setup import Layout

pytestmark = pytest.mark.usefixtures("isolated")

KEY = ("A100-80GB", "bf16", "generic")
#: 8× A100-80GB, ZeRO-3, micro-batch 2 × 4 accumulation steps, 3,000 tokens/s per GPU
CALIBRATION = {
    "gpu": "A100-80GB",
    "tokens_per_s": 24000,
    "num_gpus": 8,
    "zero_stage": 3,
    "micro_batch": 2,
    "grad_accum": 4,
}
JOB = {
    "name": "j",
    "model": {"preset": "llama-2-7b"},
    "workload": {"kind": "finetune", "tokens": 1e9, "seq_len": 4096, "global_batch": 64},
    "calibration": CALIBRATION,
}
#: the same run as `ccopt calibrate` flags (global batch = dp × micro-batch × grad_accum)
FLAGS = {
    "model": "llama-2-7b",
    "gpu": "A100-80GB",
    "num_gpus": 8,
    "zero_stage": 3,
    "micro_batch": 2,
    "global_batch": 64,
    "seq_len": 4096,
    "precision": "bf16",
    "stack": "generic",
    "inter_node_gbps": 100.0,  # a [calibration] run's network when it names none
}


def _job_request() -> tuple[Job, ConfigRequest]:
    job = Job.model_validate(JOB)
    assert job.calibration is not None
    return job, calibration_request(job.calibration, job.model.resolve(), job.workload.setup())


def test_the_calibration_table_is_the_request_of_the_equivalent_flags() -> None:
    job, req = _job_request()
    flags = request_from_options(FLAGS)
    assert req.model_name == flags.model_name
    assert req.model_dump(exclude={"model"}) == flags.model_dump(exclude={"model"})
    assert request_gpus(req) == request_gpus(flags) == (8, 8)
    measured = Layout(dp=8, zero_stage=3, micro_batch=2, grad_accum=4)
    assert request_layout(req, 8) == request_layout(flags, 8) == measured


def test_a_job_file_calibration_and_the_cli_store_the_same_point() -> None:
    job, _ = _job_request()
    from_job = assumptions_for_job(job, job.model.resolve()).calibrated_curves[KEY]
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in FLAGS.items()]
    result = CliRunner().invoke(app, ["calibrate", *flags, "--tokens-per-s", "24000", "--json"])
    assert result.exit_code == 0, result.stderr
    (point,) = load_points()
    assert point["id"] == json.loads(result.stdout)["id"]
    from_cli = base_assumptions().calibrated_curves[KEY]
    assert from_cli == from_job  # one point of the rule: the same efficiency at the same size factor


def test_a_split_that_does_not_divide_the_gpus_names_the_job_field() -> None:
    job = Job.model_validate({**JOB, "calibration": {**CALIBRATION, "tp": 3}})
    with pytest.raises(ConfigError, match=r"calibration\.num_gpus: must be a multiple of tp × pp"):
        assumptions_for_job(job, job.model.resolve())
