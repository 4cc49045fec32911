"""GPU catalog: ids, aliases, lookups and errors."""

import pytest

from optimizer.errors import CatalogError, ConfigError
from optimizer.inputs.gpus import get_gpu, load_gpus, resolve_gpu_id
from optimizer.model.efficiency import base_efficiency
from optimizer.model.fabric import default_fabric
from optimizer.model.fitted import train_features
from optimizer.model.setup import PerfAssumptions


@pytest.mark.parametrize(
    ("alias", "gpu_id"),
    [
        ("a100", "A100-80GB"),
        ("A100-80GB-SXM", "A100-80GB"),
        ("h100", "H100-80GB"),
        ("4090", "RTX4090"),
        ("rtx_4090", "RTX4090"),
        ("NVIDIA-H100", "H100-80GB"),
        ("h100-pcie", "H100-80GB-PCIE"),
        ("L40S", "L40S"),
        ("mi300x", "MI300X"),
    ],
)
def test_aliases(alias: str, gpu_id: str) -> None:
    assert resolve_gpu_id(alias) == gpu_id


def test_sxm_parts_have_nvlink_and_published_peaks() -> None:
    h100 = get_gpu("H100-80GB")
    # NVIDIA H100 SXM: 989 TFLOPS dense BF16, 3.35 TB/s, NVLink4 450 GB/s per direction
    assert (h100.bf16_tflops, h100.mem_bandwidth_gb_s, h100.intra_node_bw_gb_s) == (989, 3350, 450)
    assert h100.intra_node_link == "nvlink"
    # RTX 4090 trains at its FP32-accumulate rate, half the 330.3 FP16-accumulate rate
    assert get_gpu("4090").peak_tflops("bf16") == pytest.approx(330.3 / 2, rel=1e-3)


def test_unknown_gpu_lists_close_matches() -> None:
    with pytest.raises(ConfigError, match=r"did you mean .*h100"):
        get_gpu("h10")


def test_precision_support() -> None:
    assert not get_gpu("V100-16GB").supports("bf16")
    assert get_gpu("V100-16GB").supports("fp16")
    assert not get_gpu("A100-80GB").supports("fp8")
    assert get_gpu("H100-80GB").supports("fp8")


HEADER = (
    "gpu_id,vendor,memory_gib,mem_bandwidth_gb_s,intra_node_link,intra_node_bw_gb_s,generation,"
    "default_efficiency,efficiency_source,default_inter_node_gbps,fabric,fabric_source\n"
)


def test_bad_catalog_names_row_and_column(tmp_path) -> None:
    bad = tmp_path / "gpus.csv"
    bad.write_text(HEADER + "X1,nvidia,80,abc,nvlink,300,hopper,0.5,GUESS,3200,IB,guide\n")
    with pytest.raises(CatalogError, match=r"row 2, column 'mem_bandwidth_gb_s'"):
        load_gpus(str(bad))


@pytest.mark.parametrize(
    ("column", "row"),
    [
        ("generation", "X1,nvidia,80,2000,nvlink,300,,0.5,GUESS,3200,IB,guide"),
        ("default_efficiency", "X1,nvidia,80,2000,nvlink,300,hopper,,GUESS,3200,IB,guide"),
        ("efficiency_source", "X1,nvidia,80,2000,nvlink,300,hopper,0.5,,3200,IB,guide"),
        ("default_inter_node_gbps", "X1,nvidia,80,2000,nvlink,300,hopper,0.5,GUESS,,IB,guide"),
        ("fabric", "X1,nvidia,80,2000,nvlink,300,hopper,0.5,GUESS,3200,,guide"),
        ("default_efficiency", "X1,nvidia,80,2000,nvlink,300,hopper,1.5,GUESS,3200,IB,guide"),
    ],
)
def test_per_gpu_facts_are_required_never_defaulted(tmp_path, column: str, row: str) -> None:
    # a GPU without its generation, efficiency or fabric is an error naming file, row, column
    bad = tmp_path / "gpus.csv"
    bad.write_text(HEADER + "Y1,nvidia,80,2000,nvlink,300,hopper,0.5,GUESS,3200,IB,guide\n" + row + "\n")
    with pytest.raises(CatalogError, match=rf"gpus.csv: row 3, column '{column}'"):
        load_gpus(str(bad))


def test_a_missing_column_is_named(tmp_path) -> None:
    bad = tmp_path / "gpus.csv"
    bad.write_text(HEADER.replace(",fabric,", ",") + "X1,nvidia,80,2000,nvlink,300,hopper,0.5,GUESS,3200,g\n")
    with pytest.raises(CatalogError, match=r"missing column\(s\) fabric"):
        load_gpus(str(bad))


def test_per_gpu_facts_come_from_the_table() -> None:
    a100, h100, l4 = get_gpu("A100-80GB"), get_gpu("H100-80GB"), get_gpu("L4")
    # the values the model used before they became columns (model/efficiency.py, fabric.py)
    assert (a100.generation, a100.default_efficiency, a100.default_inter_node_gbps) == (
        "ampere-dc",
        0.78,
        1600,
    )
    assert (h100.generation, h100.default_efficiency, h100.default_inter_node_gbps) == ("hopper", 0.57, 3200)
    assert (l4.generation, l4.default_efficiency, l4.default_inter_node_gbps) == ("ada", 0.55, 100)
    assert l4.fabric == "Ethernet"


def test_every_gpu_has_memory_and_bandwidth() -> None:
    for spec in load_gpus().values():
        assert spec.memory_gib > 0 and spec.mem_bandwidth_gb_s > 0


def test_a_new_gpu_is_one_row(tmp_path) -> None:
    # a GPU the code has never heard of: its efficiency, fitted generation and fabric all come
    # from its row (nothing keys on GPU ids); un-fitted bf16 efficiency = the row's 0.42,
    # fp8 = 0.42 × the 0.8 fp8 factor, fp32 = 0.42 × 0.8
    table = tmp_path / "gpus.csv"
    table.write_text(
        HEADER.rstrip("\n") + ",bf16_tflops,fp8_tflops\n"
        "NEW-1,nvidia,96,4000,nvlink,450,hopper,0.42,GUESS,800,2 × 400 Gbit/s,guide,1000,2000\n"
    )
    gpu = load_gpus(str(table))["NEW-1"]
    raw = PerfAssumptions(use_fitted=False)
    assert base_efficiency(gpu, "bf16", raw) == (0.42, False)
    assert base_efficiency(gpu, "fp8", raw)[0] == pytest.approx(0.42 * 0.8)
    assert train_features(gpu, "bf16", "fsdp")[1] == "gen:hopper"
    fabric = default_fabric(gpu)
    assert fabric.inter_node_gbps == 800
    assert fabric.assumption.startswith("assumed 800 Gbit/s per node: 2 × 400 Gbit/s;")
