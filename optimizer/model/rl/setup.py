"""What an RL post-training step does (`RlSetup`) and the guessed constants of its model.

The phases follow the step loop of verl's RayPPOTrainer.fit (verl docs "PPO Ray Trainer":
generate_sequences, compute_ref_log_prob, compute_old_log_prob, compute_values,
update_critic, update_actor) and NeMo-RL's GRPO loop (docs "An in-depth walkthrough of GRPO":
generation, policy logprobs, reference logprobs, training, refit).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["POOL_MODES", "RlSetup", "RlAssumptions", "DEFAULT_RL_ASSUMPTIONS"]

#: colocated: one pool alternates phases (verl hybrid engine, NeMo-RL colocated generation);
#: separate: a generation pool and a training pool (OpenRLHF Ray placement, NeMo-RL
#: non-colocated generation); either: the planner chooses
POOL_MODES = ("colocated", "separate", "either")


@dataclass(frozen=True)
class RlSetup:
    """One RL step: how many sequences, how long, which extra networks run."""

    kind: str  # dpo | grpo | ppo
    prompts_per_step: int
    samples_per_prompt: int  # GRPO group size; PPO usually 1; DPO: 2 (chosen, rejected)
    prompt_tokens_mean: float
    prompt_tokens_max: int
    response_tokens_mean: float
    response_tokens_max: int
    reference: bool = True  # a frozen reference model's log-probs (KL term; DPO always)
    old_policy_logprob: bool = True  # recompute the behaviour policy's log-probs (verl default)
    critic: bool = False  # PPO value network (same shape as the policy)
    reward_model_params: float = 0.0  # a reward network's parameters (0: rule-based reward)
    #: 0: on-policy, generation and training alternate; 1: one-step off-policy, generation of
    #: step k+1 overlaps training of step k on separate pools (NeMo-RL async GRPO
    #: `max_trajectory_age_steps: 1`, OpenRLHF `--async_train`)
    async_steps: int = 0
    #: rollout engine settings a run states (0 / None: the model chooses). Tensor-parallel
    #: degree of a rollout replica (verl `rollout.tensor_model_parallel_size`, NeMo-RL
    #: `vllm_cfg.tensor_parallel_size`)
    rollout_tp: int = 0
    #: share of the whole card the rollout engine may take (verl `rollout.gpu_memory_utilization`
    #: default 0.5, NeMo-RL `vllm_cfg.gpu_memory_utilization` default 0.6); 0: what the trainer
    #: leaves × the stack's KV budget fraction
    rollout_memory_utilization: float = 0.0
    #: CUDA graphs on in the rollout engine; False: eager decode (verl ≤ v0.5
    #: `rollout.enforce_eager: True` by default "to allow cache freeing", verl/trainer/config/
    #: rollout/rollout.yaml at 8fdc4d3; default False from 2026, at b178a3c)
    rollout_cuda_graphs: bool = True
    #: sequences a replica generates per wave, the next wave starting when the whole wave is
    #: done (OpenRLHF 2024 make_experience: each actor rank sends `micro_rollout_batch_size`
    #: prompts to its vLLM engine and waits, openrlhf/trainer/ppo_utils/experience_maker.py at
    #: 2bd6ca3, 2024-05-20); 0: every sequence of the step at once (verl, NeMo-RL)
    rollout_wave: int = 0
    #: the trainers' Adam state and fp32 master weights live in CPU RAM and CPU Adam steps them
    #: (DeepSpeed ZeRO-Offload, Ren et al. 2021; OpenRLHF `--adam_offload`, in every 2024 PPO
    #: script, examples/scripts/train_ppo_llama_ray*.sh at 2bd6ca3, 2024-05-20): the policy's
    #: and the critic's. Not verl's `optimizer_offload`, which steps on the GPU
    optimizer_offload: bool = False
    #: a colocated trainer moves its training state to host memory at every refit and back
    #: before its next log-prob and training passes (NeMo-RL colocated generation: Megatron
    #: policy worker offload_before_refit / offload_after_refit / prepare_for_training,
    #: nemo_rl/models/policy/megatron_policy_worker.py, stored copy at 017d5c2); verl keeps it
    #: on the GPU (`param_offload`, `optimizer_offload` default False)
    offload_state_at_refit: bool = False
    #: the trainer's stack profile (optimizer/model/data/stacks.toml): "fsdp" (verl's default
    #: actor backend, FSDP / ZeRO-3 data parallel) or "megatron-core" (NeMo-RL's Megatron
    #: backend: tensor and pipeline layouts, the distributed optimizer, bf16 gradient reduce:
    #: megatron_cfg defaults use_distributed_optimizer true, grad_reduce_in_fp32 false,
    #: examples/configs/grpo_math_1B.yaml, stored copy at 00294d9)
    train_stack: str = "fsdp"
    #: the trainer's tensor / pipeline degrees a run states (0: the model chooses; FSDP: 1)
    train_tp: int = 0
    train_pp: int = 0
    #: the trainer's activation checkpointing a run states ("none" | "full"; "": the model
    #: tries none, then full): verl `enable_gradient_checkpointing`, NeMo-RL
    #: `activation_checkpointing`, OpenRLHF `--gradient_checkpointing`
    train_checkpointing: str = ""

    @property
    def sequences(self) -> int:
        """Sequences trained on per step (prompt + response each)."""
        return self.prompts_per_step * self.samples_per_prompt

    @property
    def generates(self) -> bool:
        """DPO trains on given pairs: no rollout, no weight sync."""
        return self.kind != "dpo"

    @property
    def mean_tokens(self) -> float:
        return self.prompt_tokens_mean + self.response_tokens_mean

    @property
    def max_tokens(self) -> int:
        return self.prompt_tokens_max + self.response_tokens_max


@dataclass(frozen=True)
class RlAssumptions:
    """Guessed constants of the RL step (each overridable through the job's [rl.assumptions])."""

    #: GUESS: a forward-only pass costs 1/3 of forward + backward (backward = 2 × forward FLOPs:
    #: Kaplan et al. 2020 §2.1, C ≈ 6N per token of which 2N forward), before recompute
    forward_share: float = 1.0 / 3.0
    #: GUESS: achieved share of the fabric's line rate by the trainer → generator weight
    #: broadcast (NCCL broadcast of bucketed tensors; verl/NeMo-RL refit)
    sync_link_efficiency: float = 0.5
    #: GUESS: bytes per parameter sent at a weight sync (bf16 weights; verl and NeMo-RL refit
    #: in the rollout dtype)
    sync_bytes_per_param: float = 2.0
    #: GUESS: fixed seconds per phase switch on a colocated pool (vLLM sleep/wake-up, KV cache
    #: re-allocation; verl `free_cache_engine`), per step
    colocated_switch_s: float = 2.0
    #: GUESS: host seconds per decode iteration of the rollout engine that the GPU waits for
    #: (scheduling, the sampled tokens' GPU → CPU copy, output processing), with CUDA graphs
    #: on: verl/vLLM decodes GPT-2 at batch 1 in 1.3 ms per token with graphs on H200
    #: (deepspeedai/DeepSpeed PR #8352, 2026-09-22), GPT-2's own GPU work ~0.1 ms; vLLM V0
    #: without multi-step scheduling shows ~4 ms bubbles per decode (vllm-project/vllm issue
    #: #6854, 2024-07-26): 1.2 ms, the newer engine
    decode_host_s_per_step: float = 1.2e-3
    #: GUESS: host seconds per layer of an eager (no CUDA graph) decode iteration (PyTorch
    #: launches every kernel from Python): (4.8 − 1.3) ms / 12 layers = 0.29 ms for GPT-2 on
    #: verl/vLLM eager vs graph (DeepSpeed PR #8352); (22.5 − 13) ms / 28 layers = 0.34 ms for
    #: Qwen2.5-Omni-7B's thinker on A800 (vllm-project/vllm-omni issue #7960, 2026-09-22):
    #: 0.3 ms. Launches overlap the GPU's work, so an eager iteration lasts max(GPU, host)
    eager_host_s_per_layer: float = 3.0e-4
    #: GUESS: share of a GPU's PCIe link (one direction) its training state's copy to or from
    #: host memory reaches (RlSetup.offload_state_at_refit: NeMo-RL's tensor.to("cpu") of
    #: pageable memory, eight GPUs of a node copying at once): the one measured host-path share
    #: we hold, GPU copies staged through host memory at 0.41 of the link
    #: (PerfAssumptions.host_staged_fraction), taken as is
    host_copy_efficiency: float = 0.41
    #: (P10, P50, P90) of measured ÷ predicted RL step and phase times: split conformal across
    #: sources (benchmarks/rl_band.py: P50 the sources' median, P10/P90 = P50 ×/÷ exp(q), q the
    #: 80% quantile of each source's |log residual| against the other sources' median; with
    #: fewer than 4 sources the largest such score × 0.8 (k + 1)/k, the stated widening), fitted
    #: by `python benchmarks/rl_accuracy.py` on benchmarks/validation/rl/ (27 numbers from
    #: NeMo-RL's v0.3 blog and v0.4 performance summary as one publisher, verl v0.5 in RLinf's
    #: comparison and the OpenRLHF paper, 2026-12-05; each source weighs the same). Three
    #: sources: the band is the widened one, wider than 80% of a new source needs on average
    #: (left out one source at a time it covered every number)
    step_band: tuple[float, float, float] = (0.82, 1.324, 2.137)


DEFAULT_RL_ASSUMPTIONS = RlAssumptions()
