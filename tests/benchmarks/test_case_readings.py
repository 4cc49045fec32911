"""Row readings of benchmarks/cases.py checked against the source numbers by hand."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

from cases import build_cases, load_rows  # noqa: E402
from load import load_file  # noqa: E402

from optimizer.model.memory import activation_bytes_per_layer  # noqa: E402

TITAN = BENCH / "validation" / "torchtitan-perf-a100-202408.csv"


def _titan_rows() -> dict[str, dict[str, str]]:
    with TITAN.open(encoding="utf-8") as fh:
        return {r["case_id"]: r for r in csv.DictReader(fh)}


def test_torchtitan_float8_mfu_is_against_twice_the_bf16_peak() -> None:
    # docs/performance.md at 3faaa1a: 405B None 109 WPS 29.0%; Float8 177 WPS 23.46%. One
    # formula and one peak would give 29.0 × 177/109 = 47.1%; the table shows half of it.
    rows = _titan_rows()
    bf16 = rows["titan2408-llama31-405b-h100-128gpu-fsdp16-tp8-none-mfu"]
    fp8 = rows["titan2408-llama31-405b-h100-128gpu-fsdp16-tp8-float8-mfu"]
    ratio = (float(fp8["value"]) / 177) / (float(bf16["value"]) / 109)
    assert ratio == pytest.approx(0.5, abs=0.01)
    assert "fp8 dense peak" in fp8["metric_meaning"]
    assert "fp8 dense peak" not in bf16["metric_meaning"]


def test_encoder_rows_are_scored_apart_from_decoder_lms() -> None:
    rows = [r for r in load_rows() if r.source_id in ("nvidia-deeplearningexamples", "fms-fsdp-readme")]
    cases, _ = build_cases(rows)
    kinds = {
        (c.row.model.lower().startswith("bert"), c.score_kind) for c in cases if c.kind == "train_throughput"
    }
    assert (True, "train_throughput_encoder") in kinds
    assert (False, "train_throughput") in kinds
    assert not {k for k in kinds if k[0] and k[1] == "train_throughput"}


def test_bert_rows_that_state_eager_attention_and_dropout_keep_their_scores() -> None:
    # hf model_memory_anatomy / perf_train_gpu_one rows: "eager attention and dropout 0.1"
    # (BERT in transformers 4.2x). Korthikanti et al. 2022 Table 2, no TP, 16-bit:
    # s·b·h·(34 + 5·a·s/h) bytes per layer; the rows train in fp32, so twice that.
    rows = [r for r in load_rows() if r.case_id == "hf-model-memory-anatomy-bert-large-bs4-vanilla-mem"]
    (case,), _ = build_cases(rows)
    setup, layout, _ = case.train
    assert setup.attention == "eager" and setup.dropout
    s, b, h, a = 512, 4, 1024, 16  # bert-large-uncased, batch 4 × 512 (the doc's dummy data)
    by_hand = 2 * s * b * h * (34 + 5 * a * s / h)
    assert by_hand == 310_378_496
    assert activation_bytes_per_layer(case.spec, setup, layout) == pytest.approx(by_hand)


def test_rows_without_a_stated_kernel_keep_the_stacks_attention() -> None:
    rows = [r for r in load_rows() if r.source_id == "peft-method-comparison-metamathqa"]
    cases, _ = build_cases(rows)
    assert cases and all(c.train[0].attention is None and not c.train[0].dropout for c in cases)


def test_head_dim_column_reaches_the_model_shape() -> None:
    """Qwen3-30B-A3B (aside3, development data since it was scored): hidden 2048 but 32 query heads
    of 128 (its config.json: head_dim 128), so queries are 4,096 wide and K/V 4 × 128 = 512, not the
    2048 and 256 that hidden/heads would give."""
    from load import load_file  # noqa: PLC0415 - lazy: benchmarks/validation is on sys.path only here

    rows = load_file(BENCH / "validation" / "aside3" / "pith-train-issue79-b200-2026-07.csv")
    cases, _ = build_cases(rows)
    spec = cases[0].spec
    assert (spec.hidden, spec.heads, spec.n_kv_heads) == (2048, 32, 4)
    assert (spec.q_dim, spec.kv_dim) == (4096, 512)


def _case(folder: str, case_id: str):
    rows = [r for p in sorted((BENCH / "validation" / folder).glob("*.csv")) for r in load_file(p)]
    cases, _ = build_cases([r for r in rows if r.case_id == case_id])
    assert len(cases) == 1
    return cases[0]


@pytest.mark.parametrize(
    ("folder", "case_id", "optimizer", "params"),
    [
        # "offload_optimizer device cpu with pin_memory (ZeRO-Offload ...; parameters are not offloaded)"
        (
            "aside22",
            "stas00-llama31-8b-h200-8gpu-ds-z3-offloadopt-fullac-liger-mbs1-seq8192-mem-reserved",
            True,
            False,
        ),
        # "ZeRO stage 3 with offload_param and offload_optimizer to CPU"
        ("aside18", "mai-llama2-7b-lora-r8-mlp-l4-2gpu-zero3-offload-mbs16-seq512-mem-smi", True, True),
        # "offload_optimizer and offload_param device none"
        ("aside6", "qwen-readme-1.8b-full-a100-1gpu-seq1024-mem", False, False),
    ],
)
def test_deepspeed_offload_read_as_the_row_states_it(
    folder: str, case_id: str, optimizer: bool, params: bool
) -> None:
    setup = _case(folder, case_id).train[0]
    assert (setup.offload_optimizer, setup.offload_params) == (optimizer, params)


def test_torchtitan_expert_tp_read_from_the_run_not_its_history() -> None:
    # "Exp 2 keeps Exp 1's TP 4 / EP 2 / ETP 4" in the history; the run: "expert_tensor_parallel_degree 1"
    case = _case(
        "aside22", "xiaohu-qwen3-30b-a3b-h200-8gpu-exp4-tp1-ep8-etp1-lbs8-seq8192-selac-compile-mem-reserved"
    )
    assert case.train[1].ep == 8 and case.train[1].etp == 1


def test_automodel_fused_linear_cross_entropy_holds_no_logits() -> None:
    # NeMo AutoModel's FusedLinearCrossEntropy needs the cut_cross_entropy package (NVIDIA-NeMo/RL
    # docs/fused-linear-cross-entropy-integration.md): the loss is Cut Cross-Entropy, read as
    # "cce", so a 131,072-token pack of Qwen3-4B holds none of its 131,072 × 151,936 logits (at
    # 14 B each, the eager count, 260 GiB: more than the H200 the run used)
    path = BENCH / "validation" / "aside28" / "ethanewer-deepswe-qwen3-automodel-h200-867fba7.csv"
    cases, skipped = build_cases(load_file(path))
    assert not skipped and cases
    assert all(c.train is not None and c.train[0].loss_kernel == "cce" for c in cases)
