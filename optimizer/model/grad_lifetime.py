"""When a training step's gradients are held beside its activations (memory.TrainingMemoryModel).

The memory model adds weights, gradients, optimizer states and activations as if all peaked at
once. Two loops break that sum, each stated by a run (TrainingSetup) or its stack:
- gradients freed after every optimizer step with one micro-batch per step (`grads_freed`,
  the run's or the stack's: FSDP and torchtitan): none exist when the loss's logits peak at the
  start of backward, and all of them only at its end, when the activations are gone;
- FSDP accumulation without reduce-scatter (`no_sync_grad_dtype`): the unsharded gradients
  of the whole model stay on every rank between micro-batches, beside the next micro-batch's
  activations.
"""

from __future__ import annotations

from optimizer.model.held import params_per_gpu
from optimizer.model.setup import Layout, TrainingSetup
from optimizer.model.spec import ModelSpec
from optimizer.units import BYTES_PER_DTYPE

__all__ = ["unsynced_grad_bytes", "gradients_at_peak", "BF16_LOSS_BYTES_PER_LOGIT"]

#: an eager cross-entropy on 16-bit logits (F.cross_entropy on bf16, no upcast; KempnerForge
#: training/loss.py, universal-llm-trainer nn.CrossEntropyLoss on output.logits) at the start of
#: backward: the logits the caller still holds (2 B), log_softmax's saved 16-bit output (2 B),
#: the gradient nll_loss hands it (2 B) and the one it returns (2 B) (ATen log_softmax saves its
#: result; the [generic] profile's 14 B counts the same four tensors with three in fp32)
BF16_LOSS_BYTES_PER_LOGIT = 2.0 + 2.0 + 2.0 + 2.0


def unsynced_grad_bytes(model: ModelSpec, setup: TrainingSetup, layout: Layout) -> float:
    """Unsharded gradients one rank keeps between accumulation micro-batches when FSDP skips the
    reduce-scatter on all but the last (setup.no_sync_grad_dtype): every parameter of its
    tensor-parallel shard at that dtype; 0 without accumulation or sharded gradients."""
    sharded = layout.zero_stage >= 2 and layout.dp * layout.cp > 1  # FSDP of one rank: NO_SHARD
    if setup.no_sync_grad_dtype is None or layout.grad_accum <= 1 or not sharded:
        return 0.0
    # FSDP2 FSDPParam.to_accumulated_grad_if_needed (torch/distributed/_composable/fsdp/
    # _fsdp_param.py): "self.unsharded_accumulated_grad = unsharded_grad.to(self.reduce_dtype)"
    # for every parameter whose post-backward skipped the reduce-scatter
    stage = params_per_gpu(model, Layout(tp=layout.tp, pp=layout.pp))
    return stage * BYTES_PER_DTYPE[setup.no_sync_grad_dtype]


def gradients_at_peak(
    layout: Layout,
    gradients: float,
    activations: float,
    head_gradients: float,
    last_layer: float,
) -> float:
    """Gradient bytes held at the peak of a step whose gradients are freed after every step (the
    run's `grads_freed` or its stack's). With one micro-batch per step the peak is the larger of
    the start of backward (every activation and the logits, only the LM head's gradient made)
    and its end (every gradient, one layer's recompute): the gradient term is what the end adds
    beyond the activations (PyTorch Optimizer.zero_grad docs: set_to_none=True "will in general
    have lower memory footprint"). With accumulation or pipelines, all of them."""
    if layout.grad_accum > 1 or layout.pp > 1:
        return gradients
    # start of backward: activations + head gradient; end: all gradients + the last layer
    return max(min(head_gradients, gradients), gradients + last_layer - activations)
