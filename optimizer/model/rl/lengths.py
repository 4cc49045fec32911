"""Response lengths of an RL step: the moments the phases need beyond the stated mean and max.

A rollout states its mean and longest response; attention (decode KV reads, training
attention FLOPs) grows with the square of a sequence's length, so its cost follows E[L²], which
the mean alone does not give. GUESS shape: lengths exponential cut at the longest (responses
that run to max_response_length stop there: the long tail of RL rollouts, verl docs "agentic
RL / partial rollout", NeMo-RL async GRPO motivation), its scale λ solving
λ (1 − e^(−cap/λ)) = mean; E[L²] = 2 λ² (1 − e^(−r) (1 + r)), r = cap / λ (moments of the
censored exponential). Equal lengths would give E[L²] = mean².
"""

from __future__ import annotations

import math

from optimizer.model.rl.setup import RlSetup

__all__ = ["response_second_moment", "response_kv_tokens", "length_weighted_tokens", "peak_kv_tokens"]


def _scale(mean: float, cap: int) -> float | None:
    """λ of the exponential whose cut at `cap` has `mean` (None: every response at the cap)."""
    if mean >= 0.999 * cap:
        return None
    lo, hi = mean, 1e6 * cap
    for _ in range(100):  # bisection: the censored mean rises with λ
        lam = math.sqrt(lo * hi)
        lo, hi = (lam, hi) if lam * -math.expm1(-cap / lam) < mean else (lo, lam)
    return math.sqrt(lo * hi)


def response_second_moment(mean: float, cap: int) -> float:
    """E[L²] of response lengths with `mean` cut at `cap` (module doc)."""
    lam = _scale(mean, cap)
    if lam is None:
        return float(cap) * cap
    r = cap / lam
    return 2.0 * lam * lam * (1.0 - math.exp(-r) * (1.0 + r))


def peak_kv_tokens(rl: RlSetup) -> float:
    """KV tokens per sequence of a rollout batch at its fullest: the sequences start together
    and hold prompt + t tokens while alive, P(L > t) of them at step t (paged KV frees a
    finished sequence's blocks: Kwon et al. 2023 §4.2), so the batch holds at most
    max_t P(L > t) (p + t) per sequence; for the exponential, at t = λ − p or just before the
    cap (module doc)."""
    p, cap = rl.prompt_tokens_mean, rl.response_tokens_max
    lam = _scale(rl.response_tokens_mean, cap)
    if lam is None:
        return p + cap
    at = [min(max(lam - p, 0.0), float(cap)), float(cap)]
    return max(math.exp(-t / lam) * (p + t) for t in at)


def response_kv_tokens(mean: float, cap: int) -> float:
    """Mean KV context of a generated token, response part: a token at position t reads t
    cached tokens, so over all tokens it is E[L²] / (2 E[L])."""
    return response_second_moment(mean, cap) / (2.0 * mean)


def length_weighted_tokens(rl: RlSetup) -> float:
    """E[T²] / E[T] of whole sequences T = prompt + response (prompt at its mean): the length
    at which a step's attention costs what it costs over the spread of lengths."""
    p, mean = rl.prompt_tokens_mean, rl.response_tokens_mean
    second = p * p + 2.0 * p * mean + response_second_moment(mean, rl.response_tokens_max)
    return second / (p + mean)
