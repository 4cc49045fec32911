"""GPU catalog: ids, aliases, lookups and errors."""

import pytest

from optimizer.errors import CatalogError, ConfigError
from optimizer.inputs.gpus import get_gpu, load_gpus, resolve_gpu_id


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


def test_bad_catalog_names_row_and_column(tmp_path) -> None:
    bad = tmp_path / "gpus.csv"
    bad.write_text(
        "gpu_id,vendor,memory_gib,mem_bandwidth_gb_s,intra_node_link,intra_node_bw_gb_s\n"
        "X1,nvidia,80,abc,nvlink,300\n"
    )
    with pytest.raises(CatalogError, match=r"row 2, column 'mem_bandwidth_gb_s'"):
        load_gpus(str(bad))


def test_every_gpu_has_memory_and_bandwidth() -> None:
    for spec in load_gpus().values():
        assert spec.memory_gib > 0 and spec.mem_bandwidth_gb_s > 0
