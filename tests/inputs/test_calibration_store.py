"""The calibration store is range-checked wherever it is read or written, not only by the CLI."""

from __future__ import annotations

import json
import math

import pytest

from optimizer.errors import ConfigError
from optimizer.inputs.calibration import load_calibration
from optimizer.inputs.calibration_store import add_point, load_points


def save_calibration(gpu, precision, efficiency, measured, path):
    """One run of `gpu` × `precision` (stack generic, size factor 0.8) added to the store."""
    record = {"gpu": gpu, "precision": precision, "stack": "generic", "efficiency": efficiency}
    return add_point({**record, "size_factor": 0.8, "measured": measured}, path)


def _store(tmp_path, efficiency):
    file = tmp_path / "calibration.json"
    file.write_text(json.dumps({"entries": {"A100-80GB/bf16": {"efficiency": efficiency}}}))
    return file


@pytest.mark.parametrize("bad", [5, -1, 0.0, "NaN", True])
def test_loading_an_out_of_range_store_is_one_clear_error(tmp_path, bad):
    file = _store(tmp_path, float("nan") if bad == "NaN" else bad)
    with pytest.raises(ConfigError, match=r"entries\.A100-80GB/bf16\.efficiency.*allowed"):
        load_calibration(file)


def test_saving_into_a_bad_store_refuses_and_keeps_its_bytes(tmp_path):
    file = _store(tmp_path, 5)
    before = file.read_bytes()
    with pytest.raises(ConfigError):
        save_calibration("H100-80GB", "bf16", 0.4, {}, path=file)
    assert file.read_bytes() == before


@pytest.mark.parametrize("bad", [math.nan, math.inf, 0.0, 1.5])
def test_an_efficiency_outside_0001_to_1_is_never_written(tmp_path, bad):
    file = tmp_path / "calibration.json"
    save_calibration("H100-80GB", "bf16", 0.4, {"request": {"model": "llama-2-7b"}}, path=file)
    before = file.read_bytes()
    with pytest.raises(ConfigError, match=r"points\[1\]\.efficiency.*allowed"):
        save_calibration("H100-80GB", "bf16", bad, {}, path=file)
    assert file.read_bytes() == before


def test_a_valid_store_round_trips(tmp_path):
    file = tmp_path / "calibration.json"
    save_calibration("H100-80GB", "bf16", 0.42, {"tokens_per_s": 1000.0}, path=file)
    (point,) = load_points(file)
    assert (point["gpu"], point["precision"], point["efficiency"]) == ("H100-80GB", "bf16", 0.42)
    assert point["measured"] == {"tokens_per_s": 1000.0} and point["when"].endswith("Z")
    assert load_calibration(file) == {}  # the (gpu, precision) table is the old entries only


def test_a_store_written_with_the_old_key_loads_and_is_rewritten(tmp_path) -> None:
    """Runs stored before the rename say `checkpointing`; they load as before, and the next
    save writes every run with `activation_checkpointing` (no user data lost)."""
    import json

    from optimizer.inputs.profile_store import load_profile_points, save_profile_point
    from optimizer.model.profile import MeasuredPoint

    store = tmp_path / "calibration.json"
    old = {
        "gpu": "A100-80GB",
        "precision": "bf16",
        "micro_batch": 32,
        "samples_per_s": 900.0,
        "checkpointing": "full",
        "optimizer": "adamw",
    }
    store.write_text(json.dumps({"profiles": {"resnet50": [old]}}))
    (point,) = load_profile_points("resnet50", store)
    assert (point.checkpointing, point.samples_per_s) == ("full", 900.0)
    new = MeasuredPoint(gpu_id="H100-80GB", precision="bf16", micro_batch=32, samples_per_s=2000.0)
    save_profile_point("resnet50", new, store)
    runs = json.loads(store.read_text())["profiles"]["resnet50"]
    assert [r["gpu"] for r in runs] == ["H100-80GB", "A100-80GB"]
    assert all("checkpointing" not in r for r in runs)
    assert runs[1]["activation_checkpointing"] == "full"
    assert [p.checkpointing for p in load_profile_points("resnet50", store)] == ["none", "full"]
