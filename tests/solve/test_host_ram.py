"""ZeRO-Offload plans check host RAM (issue 16): a plan never offloads more than its host has.

The offloaded bytes are derived by hand from Ren et al. 2021 (ZeRO-Offload §4.1: fp32 master,
Adam moments and 16-bit gradients on the CPU, partitioned over the data-parallel ranks)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from optimizer.inputs.jobs.train import Job
from optimizer.model.host import offloaded_gib_per_gpu
from optimizer.model.presets import get_preset
from optimizer.model.setup import Layout, TrainingSetup
from optimizer.solve.train.plan import plan_job

GPT2_PARAMS = get_preset("gpt2").params()
#: mixed-precision AdamW on the host: 4 (fp32 master) + 8 (moments) + 2 (bf16 gradients)
OFFLOAD_BYTES_PER_PARAM = 4 + 8 + 2


@pytest.mark.parametrize("dp,zero", [(1, 1), (4, 1), (4, 2), (2, 0)])
def test_offloaded_bytes_by_hand(dp: int, zero: int) -> None:
    setup = TrainingSetup(seq_len=1024, offload_optimizer=True)
    got = offloaded_gib_per_gpu(get_preset("gpt2"), setup, Layout(dp=dp, zero_stage=zero))
    shard = dp if zero >= 1 else 1  # ZeRO-0 does not partition: every rank holds it all
    assert got == pytest.approx(GPT2_PARAMS * OFFLOAD_BYTES_PER_PARAM / shard / 2**30, rel=1e-9)


def _job(ram_gib: float, zero: tuple[int, ...]) -> Job:
    return Job.model_validate(
        {
            "name": "offload",
            "model": {"preset": "llama-2-7b"},
            "workload": {
                "kind": "finetune",
                "tokens": 5e7,
                "seq_len": 1024,
                "global_batch": 32,
                "offload_optimizer": True,
            },
            "constraints": {"cloud": False, "deadline_days": 60, "zero_stages": list(zero)},
            "hardware": {"owned": [{"gpu": "RTX4090", "num_boxes": 2, "ram_gib": ram_gib, "vcpus": 64}]},
        }
    )


@settings(max_examples=8, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(ram_gib=st.floats(min_value=16, max_value=400), zero=st.sampled_from([(1,), (2,), (1, 2, 3)]))
def test_an_offload_plan_never_offloads_more_than_the_host_has(ram_gib: float, zero) -> None:
    result = plan_job(_job(ram_gib, zero), alternatives=0)
    p = result.plan
    if p is None:
        # infeasible only because no layout's offloaded states fit that RAM
        assert any("host RAM" in why for why in result.prepared.table.rejected.values())
        return
    lay = p.layout
    # by hand: the busiest pipeline stage's params / tp × 14 B / dp (ZeRO ≥ 1 partitions over
    # the dp ranks), per GPU, times the 8 GPUs of the box. Llama-2-7B: 32 layers of 202,383,360
    # params, embedding and LM head 32,000 × 4,096 each, final norm 4,096; with pp > 1 the
    # first/last stage holds ceil(32/pp) layers + the head and norm (Narayanan et al. 2021 §2.2)
    layer, emb, norm = 202_383_360, 32_000 * 4096, 4096
    stage = 32 * layer + 2 * emb + norm if lay.pp == 1 else -(-32 // lay.pp) * layer + emb + norm
    per_gpu = stage / lay.tp * OFFLOAD_BYTES_PER_PARAM / lay.dp / 2**30
    assert p.host.offloaded_gib_per_gpu == pytest.approx(per_gpu, rel=1e-6)
    assert per_gpu * 8 <= ram_gib * 1.05
    assert p.host.offloaded_gib_per_gpu * 8 <= ram_gib + 1e-9
    assert p.host.ram_needed_gib <= ram_gib + 1e-9


def test_small_host_ram_rejects_the_offload_plan_with_the_reason() -> None:
    # 7B on one 8-GPU box at dp 8: 6.74e9 × 14 B / 8 per GPU × 8 GPUs ≈ 88 GiB of host RAM
    result = plan_job(_job(32.0, (1,)), alternatives=0)
    assert result.plan is None
    why = next(iter(result.prepared.table.rejected.values()))
    assert "host RAM" in why and "32 GiB" in why and "more RAM" in why


def test_cloud_offload_plans_fit_the_catalogs_host_ram(rows) -> None:
    # a 70B full fine-tune with ZeRO-Offload: 68.98e9 params × 14 B ≈ 900 GiB of host state over
    # the data-parallel ranks; every plan and alternative must fit its instance's RAM
    job = Job.model_validate(
        {
            "name": "offload-70b",
            "model": {"preset": "llama-2-70b"},
            "workload": {
                "kind": "finetune",
                "tokens": 2e7,
                "seq_len": 2048,
                "global_batch": 16,
                "offload_optimizer": True,
            },
            "constraints": {
                "deadline_days": 30,
                "max_instances": 2,
                "gpu_types": ["A100-80GB", "H100-80GB", "L40S"],
            },
        }
    )
    result = plan_job(job, rows, alternatives=3)
    assert result.plan is not None
    for c in [result.plan, *result.alternatives]:
        ram = c.offering.ram_gib
        per_instance = c.host.offloaded_gib_per_gpu * c.offering.gpus_per_instance
        by_hand = (
            68_976_648_192
            / (c.layout.tp * c.layout.pp)
            * OFFLOAD_BYTES_PER_PARAM
            / (c.layout.dp if c.layout.zero_stage >= 1 else 1)
            / 2**30
            * c.offering.gpus_per_instance
        )
        assert per_instance == pytest.approx(by_hand, rel=0.1)  # pipeline stages differ a little
        if ram is not None:
            assert c.host.ram_needed_gib <= ram + 1e-9
