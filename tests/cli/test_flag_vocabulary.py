"""One vocabulary across flags, job files and JSON: renamed flags keep their old spelling as a
hidden alias that warns once; estimate and calibrate speak the job files' and plan's words."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from optimizer.cli import app
from optimizer.inputs import aliases

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
PRICING = ROOT / "pricing_data"
runner = CliRunner()

LLAMA = ["-m", "llama-2-7b", "-g", "A100-80GB", "--num-gpus", "16", "--global-batch", "64"]
TRAIN_JOB = str(EXAMPLES / "llama7b_10days.toml")
SERVE_JOB = str(EXAMPLES / "serve_bert_base.toml")
BATCH_JOB = str(EXAMPLES / "batch_12_finetunes.toml")


@pytest.fixture(autouse=True)
def _fresh_warnings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test sees the 'warn once per process' memory empty."""
    monkeypatch.setattr(aliases, "_warned", set())


def _run(args: list[str]):
    return runner.invoke(app, args)


def _json(args: list[str]) -> dict:
    result = _run(args)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def _warnings(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("warning:")]


def _solved(data):
    """An answer without the solver blocks (their wall times differ run to run) and, for
    calibrate, without what storing the same run again changes (its new id, the run it
    replaced, the prediction of the runs stored before it, the stored runs' ids)."""
    if isinstance(data, dict):
        volatile = {"solver"}
        if data.get("status") == "calibrated":
            volatile |= {"id", "replaced", "previous_prediction_step_s", "runs"}
        return {k: _solved(v) for k, v in data.items() if k not in volatile}
    if isinstance(data, list):
        return [_solved(v) for v in data]
    return data


# (command before the flag, old flag, new flag, a value, a different value, extra args after)
RENAMED = [
    (["estimate", *LLAMA], "--gpus-per-node", "--gpus-per-instance", "8", "4", []),
    (["estimate", *LLAMA], "--method", "--kind", "lora", "qlora", []),
    (
        ["calibrate", *LLAMA, "--tokens-per-s", "20000"],
        "--gpus-per-node",
        "--gpus-per-instance",
        "8",
        "4",
        [],
    ),
    (["calibrate", *LLAMA, "--tokens-per-s", "20000"], "--method", "--kind", "lora", "qlora", []),
    (["plan", TRAIN_JOB], "--time-limit", "--time-limit-s", "5", "6", []),
    (["serve", SERVE_JOB], "--time-limit", "--time-limit-s", "5", "6", []),
    (["serve-compare", SERVE_JOB], "--time-limit", "--time-limit-s", "5", "6", []),
    (["batch", BATCH_JOB], "--time-limit", "--time-limit-s", "3", "4", []),
    (["prices"], "--max-instances", "--min-instances", "2", "3", []),
]


@pytest.mark.parametrize(
    ("head", "old", "new", "value", "other", "tail"), RENAMED, ids=[f"{r[0][0]} {r[1]}" for r in RENAMED]
)
def test_old_spelling_works_warns_once_and_clashes(head, old, new, value, other, tail) -> None:
    json_flag = ["--json"]
    fresh = _run([*head, new, value, *tail, *json_flag])
    first = _run([*head, old, value, *tail, *json_flag])
    second = _run([*head, old, value, *tail, *json_flag])
    assert fresh.exit_code == first.exit_code == second.exit_code == 0, first.stderr
    assert _warnings(fresh.stderr) == []
    assert _solved(json.loads(fresh.stdout)) == _solved(json.loads(first.stdout))
    said = f"warning: {old} is now called {new}"
    assert sum(line.startswith(said) for line in _warnings(first.stderr + second.stderr)) == 1
    clash = _run([*head, new, value, old, other, *tail])
    assert clash.exit_code == 2
    lines = clash.stderr.strip().splitlines()
    assert lines[-1].startswith("error:") and "disagree" in lines[-1]
    assert new in _run([head[0], "--help"]).stdout


@pytest.mark.parametrize(
    "command",
    [
        ["plan", TRAIN_JOB],
        ["serve", SERVE_JOB],
        ["serve-compare", SERVE_JOB],
        ["batch", BATCH_JOB],
        ["report", TRAIN_JOB],
    ],
)
def test_time_limit_range_under_either_name(command) -> None:
    # the range 0.1–86400 s is stated in --help and enforced under the name given
    assert "0.1–86400" in _run([command[0], "--help"]).stdout
    for flag in ("--time-limit-s", "--time-limit"):
        result = _run([*command, flag, "0.05"])
        assert result.exit_code == 2 and f"error: {flag}: 0.05 is not allowed" in result.stderr
    clash = _run([*command, "--time-limit-s", "5", "--time-limit", "6"])
    assert clash.exit_code == 2 and "disagree" in clash.stderr


def test_refresh_seconds_flags_carry_their_unit() -> None:
    text = _run(["prices", "refresh", "--help"]).stdout
    assert "--timeout-s" in text and "--deadline-s" in text and ", 3 " in " ".join(text.split())
    for new, old in (("--timeout-s", "--timeout"), ("--deadline-s", "--deadline")):
        result = _run(["prices", "refresh", new, "0"])
        assert result.exit_code == 2 and f"{new}: 0.0 is not allowed" in result.stderr
        result = _run(["prices", "refresh", old, "0"])
        assert result.exit_code == 2
        assert _warnings(result.stderr)[0].startswith(f"warning: {old} is now called {new}")
        clash = _run(["prices", "refresh", new, "5", old, "6"])
        assert clash.exit_code == 2 and "disagree" in clash.stderr


def test_serve_compare_flag_is_the_old_spelling_of_serve_compare() -> None:
    assert "--compare" not in _run(["serve", "--help"]).stdout
    new = _json(["serve-compare", SERVE_JOB, "--json"])
    old = _run(["serve", SERVE_JOB, "--compare", "--json"])
    again = _run(["serve", SERVE_JOB, "--compare", "--json"])
    assert old.exit_code == 0
    assert _solved(json.loads(old.stdout)) == _solved(new)
    said = "warning: serve --compare is now called serve-compare"
    assert sum(line.startswith(said) for line in _warnings(old.stderr + again.stderr)) == 1


def test_kind_takes_the_job_file_vocabulary() -> None:
    full = _json(["estimate", *LLAMA, "--json"])
    assert _json(["estimate", *LLAMA, "--kind", "pretrain", "--json"]) == full
    assert _json(["estimate", *LLAMA, "--kind", "finetune", "--json"]) == full
    lora = _json(["estimate", *LLAMA, "--kind", "lora", "--json"])
    assert lora["memory_gib"]["optimizer"] < full["memory_gib"]["optimizer"]  # adapters only
    assert _json(["estimate", *LLAMA, "--method", "full", "--kind", "pretrain", "--json"]) == full
    bad = _run(["estimate", *LLAMA, "--kind", "full"])
    assert bad.exit_code == 2 and "--kind" in bad.stderr and "pretrain" in bad.stderr


@pytest.mark.parametrize(
    "command",
    [
        ["estimate", "-m", "resnet50", "-g", "h100"],
        ["calibrate", "-m", "resnet50", "-g", "h100", "--samples-per-s", "1000"],
    ],
)
def test_seq_len_is_refused_for_a_per_sample_model(command) -> None:
    result = _run([*command, "--seq-len", "2048"])
    assert result.exit_code == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: --seq-len:")


def test_serve_estimate_default_precision_is_the_serve_job_default(tmp_path: Path) -> None:
    job = tmp_path / "serve.toml"  # no precision: the serving job file's default applies
    job.write_text(
        '[model]\npreset = "llama-2-7b"\n[workload]\nkind = "serve"\n'
        "requests_per_s = 1\nprompt_tokens = 512\noutput_tokens = 128\n"
        "[constraints]\nttft_s = 5\n"
    )
    served = _json(["serve", str(job), "--json"])
    est = _json(["estimate", "-m", "llama-2-7b", "-g", "h100", "--mode", "serve", "--json"])
    assert est["precision"] == served["job"]["precision"]
    # an explicit --precision is no longer mistaken for "unset" against the old --quantization
    clash = _run(
        [
            "estimate",
            "-m",
            "llama-2-7b",
            "-g",
            "h100",
            "--mode",
            "serve",
            "--precision",
            "bf16",
            "--quantization",
            "int8",
        ]
    )
    assert clash.exit_code == 2 and "disagree" in clash.stderr
    train = _json(["estimate", *LLAMA, "--json"])
    assert train["precision"] == "bf16"


def test_serve_estimate_ttft_keeps_four_significant_figures_as_serve(tmp_path) -> None:
    # the serve job planned at the model's point prediction (confidence 0.5: the band's P50,
    # which the point carries), as estimate reports it
    job = tmp_path / "serve.toml"
    job.write_text(
        Path(SERVE_JOB).read_text().replace("[constraints]\n", "[constraints]\nconfidence = 0.5\n", 1)
    )
    served = _json(["serve", str(job), "--json"])
    assert served["job"].get("constraints", {}).get("confidence", 0.5) == 0.5
    d = served["plan"]["deployments"][0]
    bucket = served["job"]["buckets"][0]
    est = _json(
        [
            "estimate",
            "-m",
            served["job"]["model"],
            "--instance",
            f"{d['provider']}:{d['instance']}",
            "--num-gpus",
            str(d["tp"]),
            "--tp",
            str(d["tp"]),
            "--mode",
            "serve",
            "--batch",
            str(d["batch"]),
            "--prompt-tokens",
            str(bucket["prompt_tokens"]),
            "--output-tokens",
            str(bucket["output_tokens"]),
            "--precision",
            served["job"]["precision"],
            "--json",
        ]
    )
    assert est["ttft_s"] == d["ttft_s"]
    assert est["ttft_s"] == float(f"{est['ttft_s']:.4g}")


def _published_gbps(provider: str, instance: str) -> float:
    with (PRICING / "instance_network.csv").open(encoding="utf-8") as f:
        for row in csv.DictReader(f):
            if (row["provider"], row["instance_type"]) == (provider, instance):
                assert row["inter_node_is_default"] == "false"  # a published figure
                return float(row["inter_node_gbps"])
    raise AssertionError(f"{provider}:{instance} not in instance_network.csv")


def test_calibrate_instance_fits_at_the_instance_network() -> None:
    gbps = _published_gbps("aws", "p4d.24xlarge")
    out = _json(
        [
            "calibrate",
            "-m",
            "llama-2-7b",
            "--instance",
            "aws:p4d.24xlarge",
            "--num-gpus",
            "16",
            "--global-batch",
            "64",
            "--tokens-per-s",
            "20000",
            "--json",
        ]
    )
    assert out["inter_node_gbps"] == gbps
    assert out["gpu"] == "A100-40GB" and out["gpus_per_instance"] == 8  # p4d: 8× A100 40GB
    assert out["provider"] == "aws" and out["instance_type"] == "p4d.24xlarge"
    est = _json(
        ["estimate", "-m", "llama-2-7b", "--instance", "aws:p4d.24xlarge", "--num-gpus", "16", "--json"]
    )
    assert est["inter_node_gbps"] == gbps and est["inter_node_is_default"] is False
    assert est["instance"] == "aws:p4d.24xlarge" and est["gpus_per_instance"] == 8


def test_estimate_inter_node_is_default_follows_the_catalog_guess() -> None:
    with (PRICING / "instance_network.csv").open(encoding="utf-8") as f:
        guessed = next(
            (r["provider"], r["instance_type"])
            for r in csv.DictReader(f)
            if r["inter_node_is_default"] == "true"
        )
    est = _json(["estimate", "-m", "llama-2-7b", "--instance", ":".join(guessed), "--json"])
    assert est["inter_node_is_default"] is True and est["inter_node_assumed"] is True
    given = _json(
        [
            "estimate",
            "-m",
            "llama-2-7b",
            "--instance",
            ":".join(guessed),
            "--inter-node-gbps",
            "800",
            "--json",
        ]
    )
    assert given["inter_node_is_default"] is False and given["inter_node_gbps"] == 800


def test_base_and_effective_efficiency_are_named_apart() -> None:
    # a run of 16× A100-80GB, global batch 64 × 2048 tokens, measured at 20,000 tokens/s
    measured = 20_000.0
    cal = _json(["calibrate", *LLAMA, "--tokens-per-s", str(measured), "--json"])
    assert cal["status"] == "calibrated"
    assert cal["base_efficiency"] == cal["efficiency"]  # calibrate's efficiency: the base
    assert cal["measured_step_s"] == pytest.approx(64 * 2048 / measured)
    est = _json(["estimate", *LLAMA, "--json"])
    assert est["tokens_per_s"] == pytest.approx(measured, rel=1e-3)
    assert est["effective_efficiency"] == cal["effective_efficiency"]
    assert est["efficiency"] == est["effective_efficiency"]  # estimate's efficiency: effective
    # the run's own layout: its fitted base, up to the rule's run-to-run noise (model.calibrated)
    assert est["base_efficiency"] == pytest.approx(cal["base_efficiency"], rel=1e-3)
    assert est["effective_efficiency"] <= est["base_efficiency"]  # the size factor is ≤ 1
    text = _run(["calibrate", *LLAMA, "--tokens-per-s", str(measured)]).stdout
    assert "base efficiency" in " ".join(text.split())
    assert "effective efficiency" in " ".join(text.split())


def test_per_sample_calibrate_compares_per_gpu_and_old_flags_warn() -> None:
    # 3,000 samples/s over 2 GPUs is 1,500 per GPU, the basis of the predictions
    args = ["calibrate", "-m", "resnet50", "-g", "h100", "--samples-per-s", "3000"]
    out = _json([*args, "--num-gpus", "2", "--json"])
    assert out["status"] == "calibrated" and out["kind"] == "profile_point"
    assert out["samples_per_s_per_gpu"] == pytest.approx(1500.0)
    text = " ".join(_run([*args, "--num-gpus", "2"]).stdout.split())
    assert "measured 1,500.0 per GPU" in text
    old = _run([*args, "--gpus", "2", "--checkpointing", "none", "--zero", "0", "--json"])
    assert old.exit_code == 0
    said = _warnings(old.stderr)
    for flag, new in (
        ("--gpus", "--num-gpus"),
        ("--checkpointing", "--activation-checkpointing"),
        ("--zero", "--zero-stage"),
    ):
        assert any(line.startswith(f"warning: {flag} is now called {new}") for line in said)


def test_estimate_status_and_plan_names() -> None:
    fits = _json(
        ["estimate", "-m", "llama-2-7b", "-g", "A100-80GB", "--num-gpus", "8", "--zero-stage", "3", "--json"]
    )
    assert fits["status"] == "fits" and fits["fits"] is True
    assert fits["gpus_per_instance"] == fits["gpus_per_node"] == 8
    # 70B in bf16 is 140 GB of weights alone: more than one 24 GB card
    big = _json(["estimate", "-m", "llama-2-70b", "-g", "4090", "--json"])
    assert big["status"] == "does_not_fit" and big["fits"] is False


def test_help_texts() -> None:
    cal = " ".join(_run(["calibrate", "--help"]).stdout.split())
    est = " ".join(_run(["estimate", "--help"]).stdout.split())
    for words in (
        "Tensor-parallel degree",
        "Pipeline-parallel degree",
        "ZeRO stage 0-3",
        "none | selective | full",
        "samples for per-sample models",
        "Tokens per sequence",
        "fp32 | bf16 | fp16 | fp8",
        "pretrain | finetune",
    ):
        assert words in cal and words in est
    assert "--from <path>" in cal and "--instance" in cal
    assert "0.001–1" in est  # --efficiency states its range
    prices = _run(["prices", "--help"]).stdout
    assert "<list[str]>" not in prices
    for metavar in ("GPU", "PROVIDER", "PRICING", "REGION"):
        assert f" {metavar} " in prices
    for command, metavar in (("plan", "JOB"), ("serve", "JOB"), ("batch", "JOBS"), ("report", "SOURCE")):
        assert f"{{{metavar}}}" in _run([command, "--help"]).stdout
    report = " ".join(_run(["report", "--help"]).stdout.split())
    assert "in the current directory" in report
    assert "0–20" in _run(["plan", "--help"]).stdout
