"""`ccopt calibrate --peak-memory-gib X --memory-kind K` (issue 26 item 3): a measured peak
calibrates the activation bytes of a model × stack. The "measurements" here are built from the
model itself with a known activation factor, so every expected number follows by hand: weights,
gradients and optimizer states are exact and stay; the activations scale by the factor; reserved
= allocated × (1 + cache share) and device = reserved + context (MemoryBreakdown)."""

from __future__ import annotations

import json

import jsonschema
import pytest
from typer.testing import CliRunner

from optimizer import api
from optimizer.cli import app

pytestmark = pytest.mark.usefixtures("isolated")
runner = CliRunner()

#: the measured run: Llama-3-8B on 8 H100s, ZeRO-3, micro-batch 2 × 4096 tokens (stack generic)
RUN = {"model": "llama-3-8b", "num_gpus": 8, "micro_batch": 2, "seq_len": 4096, "zero_stage": 3}
#: a layout with few activations (micro-batch 1 × 1024 tokens): room on the card for 6× them
LIGHT = {"model": "llama-3-8b", "num_gpus": 8, "micro_batch": 1, "seq_len": 1024, "zero_stage": 3}
#: another layout of the same model × stack: 16 GPUs, tp 2, ZeRO-1, micro-batch 1 × 8192
OTHER = {"model": "llama-3-8b", "num_gpus": 16, "tp": 2, "micro_batch": 1, "seq_len": 8192, "zero_stage": 1}


def _flags(run: dict) -> list[str]:
    out = ["-g", "h100"]
    for key, value in run.items():
        out += [{"model": "-m"}.get(key, "--" + key.replace("_", "-")), str(value)]
    return out


def _memory(run: dict) -> dict:
    out = api.estimate(run["model"], "h100", **{k: v for k, v in run.items() if k != "model"})
    return dict(out["memory_gib"], calibrated=out["memory_calibrated"])


def _calibrate(run: dict, peak: float, *extra: str) -> dict:
    result = runner.invoke(
        app, ["calibrate", *_flags(run), "--peak-memory-gib", repr(peak), "--json", *extra]
    )
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_a_peak_with_activations_x13_is_reproduced_and_moves_other_layouts_by_03_of_their_activations() -> (
    None
):
    run, other = _memory(RUN), _memory(OTHER)
    assert run["calibrated"] is False
    # the "measurement": the model's allocated peak with 1.3× its activations
    peak = run["total"] + 0.3 * run["activations"]
    out = _calibrate(RUN, peak, "--memory-kind", "allocated")
    memory = out["memory"]
    assert out["kind"] == "memory" and memory["kind"] == "allocated" and memory["kind_source"] == "given"
    assert memory["activation_factor"] == pytest.approx(1.3, abs=1e-3)
    assert memory["states_gib"] == pytest.approx(
        run["weights"] + run["gradients"] + run["optimizer"], abs=0.02
    )
    after = _memory(RUN)
    assert after["calibrated"] is True
    assert after["total"] == pytest.approx(peak, rel=0.01)  # reproduced within 1%
    # the exact terms did not move; the activations moved by exactly ×1.3
    for term in ("weights", "gradients", "optimizer", "overhead"):
        assert after[term] == run[term]
    assert after["activations"] == pytest.approx(1.3 * run["activations"], abs=0.01)
    # another layout of the same model × stack: its allocated peak moves by 0.3 × its activations
    moved = _memory(OTHER)
    assert moved["calibrated"] is True
    assert moved["total"] - other["total"] == pytest.approx(0.3 * other["activations"], abs=0.02)
    assert moved["weights"] == other["weights"] and moved["optimizer"] == other["optimizer"]
    # another model and another stack keep the model's own count
    assert _memory({**RUN, "model": "mistral-7b"})["calibrated"] is False
    assert _memory({**RUN, "stack": "megatron-core"})["calibrated"] is False


def test_an_nvidia_smi_peak_is_the_default_kind_and_is_reproduced_in_that_metric() -> None:
    run = _memory(RUN)
    cache_share = run["reserved"] / run["total"] - 1  # reserved = allocated × (1 + share)
    context = run["device"] - run["reserved"]
    # 0.8× the activations, as nvidia-smi would show it
    peak = (run["total"] - 0.2 * run["activations"]) * (1 + cache_share) + context
    out = _calibrate(RUN, peak)  # no --memory-kind: nvidia-smi
    assert (out["memory"]["kind"], out["memory"]["kind_source"]) == ("nvidia-smi", "default")
    assert out["memory"]["activation_factor"] == pytest.approx(0.8, abs=2e-3)
    assert _memory(RUN)["device"] == pytest.approx(peak, rel=0.01)
    text = runner.invoke(app, ["calibrate", *_flags(RUN), "--peak-memory-gib", repr(peak)])
    assert "nvidia-smi (the default: give --memory-kind allocated|reserved" in " ".join(text.stdout.split())


def test_a_peak_with_a_throughput_stores_both() -> None:
    step = api.estimate("llama-3-8b", "h100", **{k: v for k, v in RUN.items() if k != "model"})["step"][
        "time_s"
    ]
    run = _memory(RUN)
    peak = run["reserved"] / run["total"] * (run["total"] - 0.5 * run["activations"])  # 0.5×, reserved
    result = runner.invoke(
        app,
        ["calibrate", *_flags(RUN), "--step-time-s", repr(step * 1.2), "--peak-memory-gib", repr(peak)]
        + ["--memory-kind", "reserved", "--json"],
    )
    assert result.exit_code == 0, result.stderr
    out = json.loads(result.stdout)
    assert out.get("kind", "efficiency") == "efficiency" and out["memory"][
        "activation_factor"
    ] == pytest.approx(0.5, abs=2e-3)
    assert _memory(RUN)["reserved"] == pytest.approx(peak, rel=0.01)
    rows = api.calibration_list()
    assert [r["kind"] for r in rows] == ["speed", "memory"]


#: a LoRA of Llama-3-8B on one H100 (80 GiB) with 16,384-token sequences and no activation
#: checkpointing: bf16 base weights alone are 8.03e9 × 2 B = 14.96 GiB; activations grow
#: linearly in the tokens of a micro-batch (FlashAttention: no s² scores), so micro-batch 1
#: holds 4× the activations of a 4,096-token micro-batch
LORA_SMALL = {"model": "llama-3-8b", "num_gpus": 1, "kind": "lora", "micro_batch": 1, "seq_len": 4096}
LORA_JOB = {
    "name": "lora-16k",
    "model": {"preset": "llama-3-8b"},
    "workload": {"kind": "lora", "tokens": 2e7, "seq_len": 16384, "global_batch": 8},
    "constraints": {
        "deadline_days": 60,
        "gpu_types": ["H100-80GB"],
        "max_gpus": 1,
        "activation_checkpointing": ["none"],
    },
}


def test_a_plan_that_did_not_fit_fits_after_a_peak_that_measured_less_activation_memory(tmp_path) -> None:
    small = _memory({**LORA_SMALL, "activation_checkpointing": "none"})
    states = small["weights"] + small["gradients"] + small["optimizer"]
    assert small["weights"] == pytest.approx(8.03e9 * 2 / 2**30, rel=0.01)  # the bf16 base
    cache = small["reserved"] / small["total"]
    context = small["device"] - small["reserved"]
    # before: one GPU, micro-batch 1 (the least memory any layout of this job has) needs
    # states + overhead + 4 × the 4k activations, × cache, + context: more than the card
    need_before = (states + small["overhead"] + 4 * small["activations"]) * cache + context
    assert need_before > 80
    before = api.plan(LORA_JOB)
    assert before["plan"] is None and before["status"] == "infeasible"
    # a measured 4k run held half the activations the model counts (allocated)
    _calibrate(
        {**LORA_SMALL, "activation_checkpointing": "none"},
        small["total"] - 0.5 * small["activations"],
        "--memory-kind",
        "allocated",
    )
    need_after = (states + small["overhead"] + 4 * 0.5 * small["activations"]) * cache + context
    assert need_after < 80 - 5  # fits, with the default headroom
    after = api.plan(LORA_JOB)["plan"]
    assert after is not None and after["memory_calibrated"] is True
    assert after["memory_activation_factor"] == pytest.approx(0.5, abs=1e-3)
    lay = after["layout"]
    assert (lay["dp"], lay["tp"], lay["pp"], lay["micro_batch"]) == (1, 1, 1, 1)
    assert after["memory_gib"]["device"] == pytest.approx(need_after, abs=0.05)
    job_file = tmp_path / "lora.toml"
    job_file.write_text(_toml(LORA_JOB))
    text = runner.invoke(app, ["plan", str(job_file)])
    assert text.exit_code == 0, text.stderr
    assert "memory calibrated: activations ×0.50 from measured peaks" in " ".join(text.stdout.split())


def _toml(job: dict) -> str:
    c = job["constraints"]
    w = job["workload"]
    return (
        f'name = "{job["name"]}"\n[model]\npreset = "llama-3-8b"\n[workload]\nkind = "{w["kind"]}"\n'
        f"tokens = {w['tokens']}\nseq_len = {w['seq_len']}\nglobal_batch = {w['global_batch']}\n"
        f'[constraints]\ndeadline_days = {c["deadline_days"]}\ngpu_types = ["H100-80GB"]\n'
        f'max_gpus = 1\nactivation_checkpointing = ["none"]\n'
    )


@pytest.mark.parametrize(
    ("peak", "extra", "phrase"),
    [
        # below the exact states: impossible, never stored (not even with --force)
        (lambda m: 0.9 * (m["weights"] + m["gradients"] + m["optimizer"]), ["--force"], "is below the"),
        # above the states but below states + the guessed workspace: no room for activations
        (lambda m: m["weights"] + m["gradients"] + m["optimizer"] + 0.01, ["--force"], "leaves no room"),
        # 6× the activations (implausible: allowed 0.2-5×)
        (lambda m: m["total"] + 5 * m["activations"], [], "implies 6× the activation memory"),
        # 0.1× the activations
        (lambda m: m["total"] - 0.9 * m["activations"], [], "implies 0.1× the activation memory"),
    ],
    ids=["below-states", "no-room", "6x", "0.1x"],
)
def test_an_impossible_or_implausible_peak_is_refused_with_the_reason(tmp_path, peak, extra, phrase) -> None:
    run = _memory(LIGHT)
    value = peak(run)
    assert value < 80
    result = runner.invoke(
        app,
        ["calibrate", *_flags(LIGHT), "--peak-memory-gib", repr(value), "--memory-kind", "allocated", *extra],
    )
    assert result.exit_code == 2, result.stdout
    (line,) = result.stderr.strip().splitlines()
    assert phrase in line and "refused" in line, line
    assert not (tmp_path / "calibration.json").exists()


def test_force_stores_an_implausible_factor_and_a_bad_kind_is_refused() -> None:
    run = _memory(LIGHT)
    out = _calibrate(LIGHT, run["total"] + 5 * run["activations"], "--memory-kind", "allocated", "--force")
    # the estimate's GiB are rounded to 0.01 in its JSON: the peak built from them is exact to
    # ±(0.005 + 5 × 0.005) GiB, the factor to that over the activations
    assert out["memory"]["activation_factor"] == pytest.approx(6.0, abs=0.03 / run["activations"])
    bad = runner.invoke(app, ["calibrate", *_flags(RUN), "--peak-memory-gib", "40", "--memory-kind", "vram"])
    assert bad.exit_code == 2
    assert (
        "--memory-kind: 'vram' is not allowed; allowed: allocated, reserved, nvidia-smi, device" in bad.stderr
    )


def test_list_shows_and_remove_drops_a_peak(tmp_path) -> None:
    run, other = _memory(RUN), _memory(OTHER)  # both uncalibrated
    first = _calibrate(RUN, run["total"] + 0.3 * run["activations"], "--memory-kind", "allocated")
    again = _calibrate(RUN, run["total"] + 0.2 * run["activations"], "--memory-kind", "allocated")
    assert again["memory"]["replaced"] == [first["memory"]["id"]]  # a re-measurement replaces
    two = _calibrate(OTHER, other["total"] + 0.44 * other["activations"], "--memory-kind", "allocated")
    # two peaks of one model × stack: the geometric mean of their factors, √(1.2 × 1.44) = 1.3145
    assert two["memory"]["peaks"] == 2
    assert two["memory"]["group_activation_factor"] == pytest.approx((1.2 * 1.44) ** 0.5, abs=1e-3)
    rows = json.loads(runner.invoke(app, ["calibrate", "--list", "--json"]).stdout)
    schema = json.loads(runner.invoke(app, ["schema", "calibrate-list"]).stdout)
    jsonschema.validate(rows, schema, cls=jsonschema.Draft202012Validator)
    assert [(r["kind"], r["memory_kind"], round(r["activation_factor"], 3)) for r in rows] == [
        ("memory", "allocated", 1.2),
        ("memory", "allocated", 1.44),
    ]
    table = runner.invoke(app, ["calibrate", "--list"])
    assert "activations ×1.200" in table.stdout and "allocated" in table.stdout
    gone = runner.invoke(app, ["calibrate", "--remove", rows[0]["id"], "--json"])
    assert [r["id"] for r in json.loads(gone.stdout)] == [rows[0]["id"]]
    assert _memory(RUN)["activations"] == pytest.approx(1.44 * run["activations"], abs=0.01)
    runner.invoke(app, ["calibrate", "--remove", "H100-80GB"])
    assert api.calibration_list() == [] and _memory(RUN)["calibrated"] is False
    store = json.loads((tmp_path / "calibration.json").read_text())
    assert store["memory_points"] == []


def test_a_corrupt_stored_peak_is_one_line_naming_the_field(tmp_path) -> None:
    bad = {"id": "x", "model": "llama-3-8b", "stack": "generic", "gpu": "H100-80GB", "precision": "bf16"}
    bad |= {"kind": "allocated", "peak_gib": 40, "activation_factor": -1}
    (tmp_path / "calibration.json").write_text(json.dumps({"memory_points": [bad]}))
    result = runner.invoke(app, ["calibrate", "--list"])
    assert result.exit_code == 2
    assert "memory_points[0].activation_factor: -1 is not allowed; allowed: a number > 0" in result.stderr


def test_a_measure_file_carries_its_peak_and_its_kind(tmp_path) -> None:
    """`ccopt measure` on a GPU writes torch.cuda.max_memory_allocated as peak_memory_gib with
    memory_metric "allocated": `calibrate --from` stores it as an allocated peak."""
    run = {"seq_len": 1024, "micro_batch": 4, "global_batch": 4, "num_gpus": 1}
    est = api.estimate("gpt2", "h100", **run)
    mem = est["memory_gib"]
    point = {
        "kind": "ccopt-calibration-point",
        "model": "gpt2",
        "model_kind": "lm",
        "device": "cuda",
        "gpu": "H100-80GB",
        "precision": "bf16",
        "micro_batch": 4,
        "seq_len": 1024,
        "num_gpus": 1,
        "samples_per_s": 4 / est["step"]["time_s"],
        "tokens_per_s": est["tokens_per_s"],
        "memory_metric": "allocated",
        "peak_memory_gib": mem["total"] + 0.3 * mem["activations"],
    }
    file = tmp_path / "point.json"
    file.write_text(json.dumps(point))
    result = runner.invoke(app, ["calibrate", "--from", str(file), "--json"])
    assert result.exit_code == 0, result.stderr
    memory = json.loads(result.stdout)["memory"]
    assert (memory["kind"], memory["kind_source"]) == ("allocated", "file")
    # estimate's GiB are rounded to 0.01: on GPT-2's ~1 GiB of activations that is ±0.5%
    assert memory["activation_factor"] == pytest.approx(1.3, abs=0.01)
