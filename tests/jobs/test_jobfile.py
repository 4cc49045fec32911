"""Job files: validation messages and the [calibration] table."""

import warnings

import pytest

from optimizer.errors import ConfigError
from optimizer.inputs import aliases
from optimizer.inputs.calibration import assumptions_for_job
from optimizer.inputs.gpus import get_gpu
from optimizer.inputs.jobs.rl import rl_job_from_dict
from optimizer.inputs.jobs.serve import serve_job_from_dict
from optimizer.inputs.jobs.train import Job, job_from_dict, load_job
from optimizer.model.setup import Layout
from optimizer.model.step_time import Cluster, training_step_time

BASE = {
    "name": "j",
    "model": {"preset": "llama-2-7b"},
    "workload": {"kind": "finetune", "tokens": 1e9, "seq_len": 4096, "global_batch": 64},
}


@pytest.mark.parametrize(
    ("patch", "phrase"),
    [
        ({"workload": {**BASE["workload"], "colour": "red"}}, "workload.colour: unknown field"),
        ({"workload": {**BASE["workload"], "precision": "fp64"}}, "workload.precision"),
        ({"workload": {**BASE["workload"], "seq_len": 0}}, "workload.seq_len"),
        ({"workload": {**BASE["workload"], "steps": 5}}, "exactly one of tokens or steps"),
        ({"constraints": {"deadline_days": -1}}, "constraints.deadline_days"),
        ({"constraints": {"zero_stages": [4]}}, "zero_stages"),
    ],
)
def test_validation_errors_name_the_field(patch: dict, phrase: str) -> None:
    with pytest.raises(ConfigError, match=phrase):
        job_from_dict({**BASE, **patch})


@pytest.mark.parametrize(
    ("from_dict", "phrase"),
    [
        (job_from_dict, "workload: Input should be a valid dictionary"),
        (serve_job_from_dict, "workload: Input should be a valid dictionary"),
        (rl_job_from_dict, "workload.kind: None is not an RL job"),
    ],
)
def test_a_workload_that_is_not_a_table_is_bad_input_not_a_crash(from_dict, phrase) -> None:
    # `workload = "x"` in a job file: each planner's kind check reads it as no kind (before: an
    # AttributeError, exit 3, for the training and serving tables)
    with pytest.raises(ConfigError, match=phrase):
        from_dict({**BASE, "workload": "x"})


def test_model_given_twice_is_rejected() -> None:
    job = job_from_dict({**BASE, "model": {"preset": "llama-2-7b", "hidden": 1}})
    with pytest.raises(ConfigError, match="model: give one of preset, hf_config or an explicit"):
        job.model.resolve()


def test_bad_toml_is_one_line(tmp_path) -> None:
    bad = tmp_path / "job.toml"
    bad.write_text("[model\npreset = 1\n")
    with pytest.raises(ConfigError, match="invalid TOML"):
        load_job(bad)


def test_calibration_table_makes_the_measured_point_exact(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("CCOPT_CALIBRATION", str(tmp_path / "none.json"))
    # a team measured 3,000 tokens/s/GPU for Llama-2-7B on 8× A100-80GB, ZeRO-3, mb 2, seq 4096
    job = Job.model_validate(
        {
            **BASE,
            "calibration": {
                "gpu": "A100-80GB",
                "tokens_per_s": 24000,
                "num_gpus": 8,
                "zero_stage": 3,
                "micro_batch": 2,
                "grad_accum": 4,
            },
        }
    )
    a = assumptions_for_job(job, job.model.resolve())
    assert ("A100-80GB", "bf16", "generic") in a.calibrated_curves  # one point of the rule
    layout = Layout(dp=8, zero_stage=3, micro_batch=2, grad_accum=4)
    step = training_step_time(
        job.model.resolve(), job.workload.setup(), layout, Cluster(get_gpu("A100-80GB"), 8, 1, 100.0), a
    )
    # 8 × 2 × 4 sequences × 4096 tokens / 24,000 tokens/s = 10.923 s per step
    # (exact up to the rule's run-to-run noise ν²: optimizer.model.calibrated)
    assert step.time_s == pytest.approx(8 * 2 * 4 * 4096 / 24000, rel=1e-3)
    assert step.calibrated


def test_old_field_names_still_load_and_warn_once():
    base = {"model": {"preset": "gpt2"}, "workload": {"tokens": 1e6, "global_batch": 8}}
    aliases._warned.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        old = job_from_dict({**base, "constraints": {"gpus": ["h100"], "checkpointing": ["full"]}})
        job_from_dict({**base, "constraints": {"gpus": ["h100"]}})
    new = job_from_dict(
        {**base, "constraints": {"gpu_types": ["h100"], "activation_checkpointing": ["full"]}}
    )
    assert old.constraints == new.constraints
    texts = [str(w.message) for w in caught if issubclass(w.category, aliases.DeprecatedName)]
    assert sum("constraints.gpus is now called constraints.gpu_types" in t for t in texts) == 1
    try:
        job_from_dict({**base, "constraints": {"gpus": ["h100"], "gpu_types": ["a100"]}})
    except ConfigError as exc:
        assert "give gpu_types or its old name gpus, not both" in str(exc)
    else:
        raise AssertionError("both names accepted")


def test_stack_field_is_checked_against_the_profiles():
    base = {"model": {"preset": "gpt2"}}
    job = job_from_dict({**base, "workload": {"tokens": 1e6, "global_batch": 8, "stack": "nemo"}})
    assert job.workload.stack == "megatron-core" and job.workload.setup().stack == "megatron-core"
    try:
        job_from_dict({**base, "workload": {"tokens": 1e6, "global_batch": 8, "stack": "jax"}})
    except ConfigError as exc:
        assert str(exc).startswith("job: workload.stack:") and "allowed" in str(exc).lower()
    else:
        raise AssertionError("unknown stack accepted")
