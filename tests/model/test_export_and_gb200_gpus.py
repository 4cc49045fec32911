"""GPU rows of issue 44 item 3: the cut-down-NVLink export parts (H800, A800) and GB200.

Every expected figure below is typed from the page the row cites (read 2026-12-05), converted
by hand to the catalog's conventions (dense peaks; intra_node_bw_gb_s per GPU, one direction):
- H800: NVIDIA H800 datasheet as tabulated in astroC86/gpu-datasheet@e0297ec: 80 GB, 3.35 TB/s,
  1979 TFLOPS BF16/FP16 and 3958 FP8 *with sparsity* (the same figures as its H100 row), NVLink
  400 GB/s bidirectional (H100: 900).
- A800: tweakers.net/nieuws/203182 (Reuters): NVLink 400 GB/s (A100: 600), listed performance
  that of the A100, up to 80 GB HBM2e, 400 W SXM.
- GB200: stas00/ml-engineering@744d01e per-GPU table: 2500 bf16, 5000 fp8, 1250 tf32, 80 fp32
  dense; 186 GB at 8.00 TB/s; 1200 W; NVLink 5 1800 GB/s bidirectional. NVIDIA's own MFU
  tables (dgxc-benchmarking) use 2450 / 4900.
"""

from __future__ import annotations

import csv
import json

import pytest
from typer.testing import CliRunner

from optimizer.cli import app
from optimizer.inputs.gpus import data_path, get_gpu, load_gpus, resolve_gpu_id
from optimizer.model.presets import PRESETS
from optimizer.model.setup import Layout, PerfAssumptions, TrainingSetup
from optimizer.model.step_time import Cluster, training_step_time

NEW = ("H800-80GB", "A800-80GB", "GB200")


def test_the_new_rows_load_under_their_ids_and_aliases() -> None:
    gpus = load_gpus()
    assert set(NEW) <= set(gpus)
    assert resolve_gpu_id("H800") == "H800-80GB"
    assert resolve_gpu_id("nvidia-h800-sxm") == "H800-80GB"
    assert resolve_gpu_id("a800") == "A800-80GB"
    assert resolve_gpu_id("GB200-NVL72") == "GB200"
    # the generation groups of their siblings (bands and fits are grouped by generation)
    assert gpus["H800-80GB"].generation == gpus["H100-80GB"].generation == "hopper"
    assert gpus["A800-80GB"].generation == gpus["A100-80GB"].generation == "ampere-dc"
    assert gpus["GB200"].generation == gpus["B200"].generation == "blackwell"
    for gpu_id in NEW:
        assert gpus[gpu_id].vendor == "nvidia"
        assert gpus[gpu_id].intra_node_link == "nvlink"
        assert gpus[gpu_id].spec_confidence == "published"


def test_h800_figures_are_the_datasheet_ones() -> None:
    h800 = get_gpu("h800")
    assert h800.memory_gib == 80
    assert h800.mem_bandwidth_gb_s == 3.35 * 1000
    # datasheet peaks are with 2:4 sparsity; dense is half (989.5 -> 989, as the H100 row)
    assert h800.bf16_tflops == pytest.approx(1979 / 2, abs=0.5)
    assert h800.fp16_tflops == h800.bf16_tflops
    assert h800.fp8_tflops == pytest.approx(3958 / 2, abs=0.5)
    # NVLink 400 GB/s bidirectional = 200 per direction; H100: 900 -> 450
    assert h800.intra_node_bw_gb_s == 400 / 2
    assert get_gpu("h100").intra_node_bw_gb_s == 900 / 2


def test_a800_is_an_a100_80gb_with_400_gb_s_nvlink() -> None:
    a800, a100 = get_gpu("a800"), get_gpu("a100-80gb")
    assert a800.intra_node_bw_gb_s == 400 / 2
    assert a100.intra_node_bw_gb_s == 600 / 2
    assert (a800.memory_gib, a800.bf16_tflops, a800.tf32_tflops, a800.tdp_w) == (80, 312, 156, 400)
    assert a800.mem_bandwidth_gb_s == a100.mem_bandwidth_gb_s == 2039
    assert a800.fp8_tflops is None  # Ampere: no FP8


def test_gb200_figures_are_the_spec_page_ones() -> None:
    gb200 = get_gpu("gb200")
    assert (gb200.bf16_tflops, gb200.fp16_tflops, gb200.fp8_tflops) == (2500, 2500, 5000)
    assert (gb200.tf32_tflops, gb200.fp32_tflops) == (1250, 80)
    assert (gb200.memory_gib, gb200.mem_bandwidth_gb_s, gb200.tdp_w) == (186, 8.00 * 1000, 1200)
    assert gb200.intra_node_bw_gb_s == 1800 / 2
    # NVIDIA's MFU denominators (2450 bf16, 4900 fp8) are within 2% of these peaks
    assert 2450 / gb200.bf16_tflops == pytest.approx(0.98)
    assert 4900 / gb200.fp8_tflops == pytest.approx(0.98)


def test_every_new_row_cites_a_page_with_its_read_date_and_flags_its_guesses() -> None:
    with open(data_path("gpus.csv"), newline="", encoding="utf-8") as handle:
        rows = {r["gpu_id"]: r for r in csv.DictReader(handle) if r["gpu_id"] in NEW}
    assert set(rows) == set(NEW)
    for row in rows.values():
        assert "2026-12-05" in row["source"]
        assert row["efficiency_source"].startswith("GUESS")
        assert "GUESS" in row["fabric_source"]


def test_h800_is_slower_than_h100_on_tp8_only_through_nvlink() -> None:
    # same die and peaks: compute is equal; NVLink 200 vs 450 GB/s per direction makes the
    # tensor-parallel all-reduces slower, by at most the bandwidth ratio (latency terms equal)
    spec = PRESETS["llama-2-7b"]
    setup, layout = TrainingSetup(seq_len=4096), Layout(tp=8, micro_batch=1)
    for assumptions in (None, PerfAssumptions(use_fitted=False, efficiency=0.5)):
        h100, h800 = (
            training_step_time(spec, setup, layout, Cluster(get_gpu(g), 8), assumptions)
            for g in ("h100", "h800")
        )
        assert h800.compute_s == h100.compute_s
        assert h800.communication_s > h100.communication_s
        assert h800.communication_s / h100.communication_s <= 450 / 200 + 1e-9
        assert h800.time_s > h100.time_s


def test_estimate_runs_on_h800_and_shows_the_nvlink_difference() -> None:
    runner = CliRunner()

    def step(gpu: str, *extra: str) -> dict:
        done = runner.invoke(app, ["estimate", "-m", "llama-2-7b", "-g", gpu, *extra, "--json"])
        assert done.exit_code == 0, done.stderr
        return json.loads(done.stdout)

    small = runner.invoke(app, ["estimate", "-m", "gpt2", "--gpu", "H800", "--json"])
    assert small.exit_code == 0, small.stderr
    assert json.loads(small.stdout)["gpu"] == "H800-80GB"
    h100, h800 = (step(g, "--num-gpus", "8", "--tp", "8") for g in ("h100", "h800"))
    assert h800["step"]["compute_s"] == h100["step"]["compute_s"]
    assert h800["step"]["communication_s"] > h100["step"]["communication_s"]
