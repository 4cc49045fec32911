"""`ccopt measure` on the CPU with tiny models: the calibration point it writes is one
`ccopt calibrate --from` accepts. Skipped only when PyTorch is absent (it is not in the test
extra: the default torch wheel of the registry is large; `pip install -e '.[measure]'`), unless
CCOPT_REQUIRE_TORCH is set (CI, when it installed torch), where its absence fails."""

from __future__ import annotations

import json
import os

import jsonschema
import pytest
from typer.testing import CliRunner

from optimizer.api.measure import measure
from optimizer.cli import app
from optimizer.cli.schema_cmd import schema_of

if os.environ.get("CCOPT_REQUIRE_TORCH"):
    import torch
else:
    torch = pytest.importorskip("torch", reason="PyTorch not installed: `pip install -e '.[measure]'`")
runner = CliRunner()

TINY = """
import torch

def tiny():
    return torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * 8 * 8, 16),
                               torch.nn.ReLU(), torch.nn.Linear(16, 10))
"""


def test_module_factory_point_is_accepted_by_calibrate(tmp_path, monkeypatch) -> None:
    (tmp_path / "tinynet.py").write_text(TINY)
    monkeypatch.syspath_prepend(str(tmp_path))
    out = tmp_path / "point.json"
    result = runner.invoke(
        app,
        [
            "measure",
            "--module",
            "tinynet:tiny",
            "--input-shape",
            "3,8,8",
            "--micro-batch",
            "4",
            "--steps",
            "3",
            "--warmup-steps",
            "1",
            "--device",
            "cpu",
            "-o",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.stderr
    point = json.loads(out.read_text())
    assert point["device"] == "cpu" and point["peak_memory_gib"] is None  # no device memory
    assert point["trained_params"] == 3 * 8 * 8 * 16 + 16 + 16 * 10 + 10  # counted by hand
    assert point["samples_per_s"] == pytest.approx(4 / point["step_time_s"])
    jsonschema.validate(point, schema_of("measure"), cls=jsonschema.Draft202012Validator)
    # a CPU run stands for a GPU type only when told which
    refused = runner.invoke(app, ["calibrate", "--from", str(out)])
    assert refused.exit_code == 2 and "--gpu" in refused.stderr
    result = runner.invoke(app, ["calibrate", "--from", str(out), "--gpu", "T4", "--json"])
    assert result.exit_code == 0, result.stderr
    stored = json.loads((tmp_path / "calibration.json").read_text())["profiles"]["tiny"][0]
    assert stored["gpu"] == "T4" and stored["samples_per_s"] == point["samples_per_s"]


def test_hf_config_lm_point(tmp_path) -> None:
    cfg = {
        "model_type": "llama",
        "hidden_size": 32,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "intermediate_size": 64,
        "vocab_size": 64,
    }
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    out = tmp_path / "lm.json"
    result = runner.invoke(
        app,
        [
            "measure",
            "--hf-config",
            str(tmp_path / "config.json"),
            "--seq-len",
            "16",
            "--steps",
            "2",
            "--warmup-steps",
            "1",
            "--device",
            "cpu",
            "-o",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.stderr
    point = json.loads(out.read_text())
    assert point["model_kind"] == "lm" and point["seq_len"] == 16
    assert point["tokens_per_s"] == pytest.approx(point["samples_per_s"] * 16)
    jsonschema.validate(point, schema_of("measure"), cls=jsonschema.Draft202012Validator)
    printed = runner.invoke(
        app,
        [
            "measure",
            "--hf-config",
            str(tmp_path / "config.json"),
            "--seq-len",
            "16",
            "--steps",
            "1",
            "--warmup-steps",
            "0",
            "--device",
            "cpu",
            "-o",
            str(tmp_path / "again.json"),
            "--json",
        ],
    )
    assert printed.exit_code == 0, printed.stderr
    jsonschema.validate(json.loads(printed.stdout), schema_of("measure"), cls=jsonschema.Draft202012Validator)
    assert point["trained_params"] > 64 * 32  # at least the embedding


def test_without_a_model_is_one_clear_line(tmp_path) -> None:
    result = runner.invoke(app, ["measure", "-o", str(tmp_path / "x.json")])
    assert result.exit_code == 2 and "--hf-config or --module" in result.stderr


def test_every_step_is_reported_warm_up_included(tmp_path, monkeypatch) -> None:
    (tmp_path / "tinynet.py").write_text(TINY)
    monkeypatch.syspath_prepend(str(tmp_path))
    seen: list[tuple[int, int]] = []
    measure(
        module="tinynet:tiny",
        input_shape=(3, 8, 8),
        micro_batch=2,
        steps=3,
        warmup_steps=2,
        device="cpu",
        on_step=lambda done, total: seen.append((done, total)),
    )
    assert seen == [(1, 5), (2, 5), (3, 5), (4, 5), (5, 5)]
