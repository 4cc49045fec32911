"""One request shape (issue 24): `ccopt estimate` and `ccopt calibrate` take the same
configuration options (generated from ConfigRequest), calibrate fits exactly the configuration
estimate builds — context parallelism, virtual stages, sequence parallelism, the attention
kernel, LoRA and offload included — and the store records the measured run's request."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from optimizer import api
from optimizer.cli import app
from optimizer.cli.calibrate_cmd import CALIBRATE_ONLY
from optimizer.cli.estimate_cmd import ESTIMATE_ONLY
from optimizer.inputs.calibration import calibration_requests, load_calibration

runner = CliRunner()

#: llama-2-7b (32 layers, 32 heads) on 16 H100s: tp 2 × pp 2 × cp 2 × dp 2, 2 virtual stages
#: per GPU (pp × vp = 4 divides 32 layers), 64 sequences of 4096 tokens per step
SPLIT = [
    "-m",
    "llama-2-7b",
    "-g",
    "h100",
    "--num-gpus",
    "16",
    "--tp",
    "2",
    "--pp",
    "2",
    "--context-parallel",
    "2",
    "--virtual-stages",
    "2",
    "--sequence-parallel",
    "--attention",
    "eager",
    "--global-batch",
    "64",
    "--seq-len",
    "4096",
]
#: LoRA (rank 8 on q and v) with optimizer and parameter offload (ZeRO 3) on 8 H100s
LORA = [
    "-m",
    "llama-2-7b",
    "-g",
    "h100",
    "--num-gpus",
    "8",
    "--kind",
    "lora",
    "--lora-rank",
    "8",
    "--lora-targets",
    "q,v",
    "--zero-stage",
    "3",
    "--offload-optimizer",
    "--offload-params",
    "--global-batch",
    "32",
    "--seq-len",
    "2048",
]


def _options(command: str) -> dict[str, tuple[tuple[str, ...], str | None, bool]]:
    """{parameter name: (flags, help, hidden)} of a command's click parameters."""
    click_command = typer.main.get_command(app).commands[command]  # type: ignore[attr-defined]
    return {
        p.name: (tuple(p.opts) + tuple(p.secondary_opts), getattr(p, "help", None), p.hidden)
        for p in click_command.params
    }


def _json(args: list[str]) -> dict:
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_estimate_and_calibrate_take_the_same_configuration_options() -> None:
    estimate, calibrate = _options("estimate"), _options("calibrate")
    common = {"prices", "offline", "json_out"}
    shared_estimate = {k: v for k, v in estimate.items() if k not in {*ESTIMATE_ONLY, *common}}
    shared_calibrate = {k: v for k, v in calibrate.items() if k not in {*CALIBRATE_ONLY, *common}}
    assert shared_estimate == shared_calibrate  # same names, flags, help and hidden old names
    for flag in (
        "--attention",
        "--sequence-parallel",
        "--context-parallel",
        "--virtual-stages",
        "--lora-rank",
        "--lora-targets",
        "--offload-optimizer",
        "--offload-params",
        "--optimizer",
        "--kind",
    ):
        assert any(flag in flags for flags, _, _ in shared_calibrate.values()), flag
    # the documented command-only options exist where they are said to
    assert set(ESTIMATE_ONLY) <= set(estimate) and not set(ESTIMATE_ONLY) & set(calibrate)
    assert set(CALIBRATE_ONLY) <= set(calibrate) and not set(CALIBRATE_ONLY) & set(estimate)
    # every request field is an option of estimate, and the old names are hidden
    assert set(api.ConfigRequest.model_fields) <= set(estimate)
    assert all(estimate[old][2] for old in api.OLD_NAMES)


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["--zero-stage", "5"], "error: --zero-stage: 5 is not allowed; allowed: 0, 1, 2, 3"),
        (
            ["--tp", "3"],
            "error: --tp: 3 must divide the attention heads (32) and KV heads (32) of llama-2-7b",
        ),
        (["--virtual-stages", "3", "--pp", "2"], "error: --virtual-stages: 3 needs --pp > 1 and pp × vp"),
        (["--attention", "sdpa"], "error: --attention: 'sdpa' is not allowed; allowed: flash, eager"),
        (
            ["--lora-targets", "q,x"],
            "error: --lora-targets: x not allowed; allowed: q, k, v, o, gate, up, down",
        ),
        (["--offload-params"], "error: --offload-params: needs --zero-stage 3"),
        (["--context-parallel", "0"], "error: --context-parallel: 0 is not allowed; allowed: an integer > 0"),
        (
            ["--expert-parallel", "2"],
            "error: --expert-parallel: 2 must divide the experts of an MoE model (llama-2-7b has none)",
        ),
    ],
)
def test_a_bad_value_is_the_same_one_line_error_in_both_commands(args, line) -> None:
    head = ["-m", "llama-2-7b", "-g", "h100", "--num-gpus", "8"]
    for command in (["estimate", *head], ["calibrate", *head, "--step-time-s", "3"]):
        result = runner.invoke(app, [*command, *args])
        assert result.exit_code == 2, (command, result.stderr)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(line), (command, lines)


@pytest.mark.parametrize(
    ("flags", "measured_step_s", "tokens_per_step"),
    [(SPLIT, 4.0, 64 * 4096), (LORA, 1.0, 32 * 2048)],
    ids=["cp-vp-sp-eager", "lora-offload"],
)
def test_a_calibrated_run_is_reproduced_by_estimate(flags, measured_step_s, tokens_per_step) -> None:
    cal = _json(["calibrate", *flags, "--step-time-s", str(measured_step_s), "--json"])
    assert cal["status"] == "calibrated" and cal["gpu"] == "H100-80GB"
    assert cal["measured_step_s"] == measured_step_s
    assert cal["calibrated_prediction_step_s"] == pytest.approx(measured_step_s, rel=1e-3)
    est = _json(["estimate", *flags, "--json"])
    assert est["calibrated"] is True
    assert est["step"]["time_s"] == pytest.approx(measured_step_s, rel=1e-3)
    # tokens/s over all GPUs = sequences × tokens per step / the measured step time
    assert est["tokens_per_s"] == pytest.approx(tokens_per_step / measured_step_s, rel=1e-3)


def test_the_store_records_the_whole_request_of_the_measured_run() -> None:
    _json(["calibrate", *SPLIT, "--step-time-s", "4", "--json"])
    (request,) = calibration_requests().values()
    assert request["model"] == "llama-2-7b" and request["gpu"] == "h100"
    assert (request["tp"], request["pp"], request["num_gpus"]) == (2, 2, 16)
    assert (request["context_parallel"], request["virtual_stages"]) == (2, 2)
    assert request["sequence_parallel"] is True and request["attention"] == "eager"
    assert (request["global_batch"], request["seq_len"], request["precision"]) == (64, 4096, "bf16")
    # the recorded request is a request: estimate of it is the calibrated run again
    again = api.estimate_request(api.request_from_options(request))
    assert again["step"]["time_s"] == pytest.approx(4.0, rel=1e-3)
    _json(["calibrate", *LORA, "--precision", "fp8", "--step-time-s", "1", "--json"])
    lora = calibration_requests()[("H100-80GB", "fp8")]
    assert lora is not None
    assert (lora["kind"], lora["lora_rank"], lora["lora_targets"]) == ("lora", 8, ["q", "v"])
    assert lora["offload_optimizer"] is True and lora["offload_params"] is True


def test_a_store_of_the_old_shape_still_loads(tmp_path: Path, monkeypatch) -> None:
    store = tmp_path / "old.json"
    layout = {"dp": 8, "tp": 1, "pp": 1, "zero_stage": 3, "activation_checkpointing": "none"}
    layout |= {"micro_batch": 1, "grad_accum": 8}
    measured = {"model": "llama-2-7b", "num_gpus": 8, "layout": layout, "seq_len": 2048}
    measured |= {"stack": "generic", "step_time_s": 3.0, "tokens_per_s": 43690.7}
    store.write_text(json.dumps({"entries": {"H100-80GB/bf16": {"efficiency": 0.3, "measured": measured}}}))
    assert load_calibration(store) == {("H100-80GB", "bf16"): 0.3}
    request = calibration_requests(store)[("H100-80GB", "bf16")]
    assert request is not None
    assert (request["gpu"], request["num_gpus"], request["zero_stage"]) == ("H100-80GB", 8, 3)
    assert request["global_batch"] == 8 * 1 * 8  # dp × micro-batch × grad-accum
    monkeypatch.setenv("CCOPT_CALIBRATION", str(store))
    assert api.estimate_request(api.request_from_options(request))["calibrated"] is True


def test_estimate_keywords_and_the_request_agree() -> None:
    """The keyword API (today's names, old ones included) builds the same request."""
    with pytest.warns(UserWarning, match="--zero is now called --zero-stage"):
        by_keywords = api.estimate(
            "llama-2-7b", "h100", num_gpus=8, zero=3, method="lora", lora_targets=("q",)
        )
    request = api.request_from_options(
        {
            "model": "llama-2-7b",
            "gpu": "h100",
            "num_gpus": 8,
            "zero_stage": 3,
            "kind": "lora",
            "lora_targets": "q",
        }
    )
    assert by_keywords == api.estimate_request(request)
    with pytest.raises(TypeError):
        api.estimate("llama-2-7b", "h100", not_a_field=1)


def test_request_flags_give_the_request_back() -> None:
    request = api.request_from_options(
        {
            "model": "llama-2-7b",
            "instance": "aws:p5.48xlarge",
            "num_gpus": 16,
            "context_parallel": 2,
            "sequence_parallel": False,
            "inter_node_gbps": 3200.0,
            "lora_targets": ("q", "v"),
            "kind": "lora",
        }
    )
    flags = api.request_flags(request)
    assert flags == [
        "--model",
        "llama-2-7b",
        "--instance",
        "aws:p5.48xlarge",
        "--num-gpus",
        "16",
        "--inter-node-gbps",
        "3200",
        "--context-parallel",
        "2",
        "--no-sequence-parallel",
        "--kind",
        "lora",
        "--lora-targets",
        "q,v",
    ]
    est = _json(["estimate", *flags, "--json"])
    assert est == api.estimate_request(request)


def test_a_measure_point_maps_onto_the_request(tmp_path: Path) -> None:
    """A `ccopt measure` point of an LM (one GPU, one micro-batch per step) is the request
    {model, gpu, precision, optimizer, micro_batch, global_batch = micro_batch, seq_len}."""
    point = {
        "kind": "ccopt-calibration-point",
        "model": "llama-2-7b",
        "model_kind": "lm",
        "device": "cuda",
        "gpu": "H100-80GB",
        "precision": "bf16",
        "optimizer": "adamw",
        "micro_batch": 2,
        "num_gpus": 1,
        "seq_len": 1024,
        "samples_per_s": 1.5,
        "tokens_per_s": 1.5 * 1024,
    }
    fields = api.point_request(point)
    assert fields == {
        "model": "llama-2-7b",
        "gpu": "H100-80GB",
        "precision": "bf16",
        "micro_batch": 2,
        "optimizer": "adamw",
        "seq_len": 1024,
        "global_batch": 2,
    }
    file = tmp_path / "point.json"
    file.write_text(json.dumps(point))
    cal = _json(["calibrate", "--from", str(file), "--json"])
    assert cal["measured_step_s"] == pytest.approx(2 / 1.5)  # 2 sequences at 1.5 per second
    est = _json(
        [
            "estimate",
            "-m",
            "llama-2-7b",
            "-g",
            "H100-80GB",
            "--micro-batch",
            "2",
            "--seq-len",
            "1024",
            "--json",
        ]
    )
    assert est["tokens_per_s"] == pytest.approx(1536, rel=1e-3)


def test_from_plan_is_a_request_of_the_plan_row(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    plan = _json(["plan", str(root / "examples/llama7b_10days.toml"), "--json"])
    request = api.plan_row_request(plan, 0)
    assert isinstance(request, api.ConfigRequest)
    lay = plan["plan"]["layout"]
    assert request.instance == f"{plan['plan']['provider']}:{plan['plan']['instance']}"
    assert (request.num_gpus, request.tp, request.pp) == (plan["plan"]["gpus"], lay["tp"], lay["pp"])
    file = tmp_path / "plan.json"
    file.write_text(json.dumps(plan))
    from_plan = _json(["estimate", "--from-plan", str(file), "--json"])
    flags = _json(["estimate", *api.request_flags(request), "--json"])
    assert from_plan == flags  # the plan's row and its request as flags: one configuration


def test_expert_parallel_splits_the_experts_of_an_moe_estimate() -> None:
    # mixtral-8x7b (8 experts of 3 × 4096 × 14336 weights in each of 32 layers) on 16 H100s,
    # tp 2, ZeRO 1: with ep 8 each GPU holds 1 of the 8 experts of every layer, so its 16-bit
    # weights lose 7/8 × 32 × 8 × 3 × 4096 × 14336 / tp 2 parameters × 2 B
    flags = ["-m", "mixtral-8x7b", "-g", "h100", "--num-gpus", "16", "--tp", "2", "--zero-stage", "1"]
    flags += ["--seq-len", "2048", "--json"]
    dense = _json(["estimate", *flags])
    split = _json(["estimate", *flags, "--expert-parallel", "8"])
    dropped_gib = 7 / 8 * 32 * 8 * 3 * 4096 * 14336 / 2 * 2 / 2**30
    weights = dense["memory_gib"]["weights"] - split["memory_gib"]["weights"]
    assert weights == pytest.approx(dropped_gib, abs=0.01)  # 2-decimal GiB in the JSON
    assert split["layout"]["ep"] == 8
