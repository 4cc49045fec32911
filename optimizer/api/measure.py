"""`ccopt measure`: a few training steps on the local device, written as a calibration point.

The model is a Hugging Face causal LM built from a local config.json (random weights, no
download: transformers' AutoModelForCausalLM.from_config when transformers is installed, else
a minimal pre-norm decoder of the config's shape in plain torch), or a user's factory
`package.module:function` returning a torch.nn.Module (or `(module, make_batch)`, where
`make_batch(micro_batch)` returns the forward's positional inputs). Data are synthetic. The
reading excludes the warm-up steps. Memory on CUDA is torch.cuda.max_memory_allocated /
max_memory_reserved; on the CPU there is no device memory to read, so the file says so and
records the process's peak resident set size growth (resource.getrusage ru_maxrss) instead.
PyTorch is imported only here, only when measuring (extra `[measure]`).
"""

from __future__ import annotations

import importlib
import json
import resource
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from optimizer.api.calibrate import POINT_FILE_KIND
from optimizer.api.outputs import output_file
from optimizer.errors import ConfigError, install_extra
from optimizer.files import OutputFile, read_json_input
from optimizer.inputs.gpus import resolve_gpu_id
from optimizer.report.contract.common import emit
from optimizer.report.contract.measure import MeasureOutput
from optimizer.units import GIB

__all__ = ["measure", "write_point"]

_DTYPES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}
_KIB = 1024  # ru_maxrss is in KiB on Linux


def _torch() -> Any:
    try:
        return importlib.import_module("torch")
    except ImportError:
        raise ConfigError(
            f"measure: PyTorch is not installed; allowed: {install_extra('measure')} "
            "(or any torch build for your device)"
        ) from None


def _hf_config(path: str | Path) -> dict[str, Any]:
    file = Path(path)
    if file.is_dir():
        file = file / "config.json"
    unreadable = f"--hf-config: {file} is not a JSON config"
    cfg = read_json_input(file, "--hf-config", lambda exc: f"{unreadable} ({exc})", what="--hf-config")
    try:
        return dict(cfg)
    except ValueError as exc:  # JSON that is no object (a string, a list of pairs' kin)
        raise ConfigError(f"{unreadable} ({exc})") from None


def _builtin_decoder(torch: Any, cfg: dict[str, Any]) -> Any:
    """A pre-norm decoder of the config's shape: embedding, layers of causal self-attention +
    MLP (torch.nn.TransformerEncoderLayer with a causal mask), final norm, LM head."""
    nn = torch.nn
    try:
        hidden, layers = int(cfg["hidden_size"]), int(cfg["num_hidden_layers"])
        heads, vocab = int(cfg["num_attention_heads"]), int(cfg["vocab_size"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(
            f"--hf-config: needs hidden_size, num_hidden_layers, num_attention_heads, vocab_size ({exc})"
        ) from None
    ffn = int(cfg.get("intermediate_size") or 4 * hidden)

    class Decoder(nn.Module):  # type: ignore[misc,name-defined]
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(vocab, hidden)
            self.blocks = nn.ModuleList(
                nn.TransformerEncoderLayer(hidden, heads, ffn, dropout=0.0, batch_first=True, norm_first=True)
                for _ in range(layers)
            )
            self.norm = nn.LayerNorm(hidden)
            self.head = nn.Linear(hidden, vocab, bias=False)

        def forward(self, ids: Any) -> Any:
            mask = nn.Transformer.generate_square_subsequent_mask(ids.shape[1], device=ids.device)
            x = self.embed(ids)
            for block in self.blocks:
                x = block(x, src_mask=mask, is_causal=True)
            return self.head(self.norm(x))

    return Decoder()


def _lm(torch: Any, path: str | Path) -> tuple[Any, str, int]:
    """(module, builder used, vocab size) for a config.json."""
    cfg = _hf_config(path)
    try:
        transformers = importlib.import_module("transformers")
    except ImportError:
        return (
            _builtin_decoder(torch, cfg),
            "built-in torch decoder (transformers absent)",
            int(cfg["vocab_size"]),
        )
    config = transformers.AutoConfig.for_model(**cfg) if "model_type" in cfg else None
    if config is None:
        return _builtin_decoder(torch, cfg), "built-in torch decoder (no model_type)", int(cfg["vocab_size"])
    return (
        transformers.AutoModelForCausalLM.from_config(config),
        f"transformers {transformers.__version__} AutoModelForCausalLM.from_config",
        int(config.vocab_size),
    )


def _factory(spec: str) -> tuple[Any, Any]:
    """(module, make_batch or None) from 'package.module:function'."""
    if ":" not in spec:
        raise ConfigError(f"--module: {spec!r} is not allowed; allowed: package.module:function")
    mod_name, func_name = spec.split(":", 1)
    try:
        func = getattr(importlib.import_module(mod_name), func_name)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"--module: cannot load {spec!r} ({exc})") from None
    made = func()
    return made if isinstance(made, tuple) else (made, None)


def _loss(torch: Any, out: Any) -> Any:
    """A scalar to differentiate: the model's loss if it returns one, else mean(output²)."""
    if hasattr(out, "logits"):
        out = out.logits
    if isinstance(out, (tuple, list)):
        out = out[0]
    return out.float().pow(2).mean()


@dataclass(frozen=True)
class _Steps:
    """What is trained and how long: micro-batch, timed and warm-up steps, precision, optimizer."""

    micro_batch: int
    steps: int
    warmup_steps: int
    precision: str
    optimizer: str


def measure(
    *,
    hf_config: str | None = None,
    module: str | None = None,
    name: str | None = None,
    input_shape: tuple[int, ...] | None = None,
    micro_batch: int = 2,
    seq_len: int = 128,
    steps: int = 10,
    warmup_steps: int = 3,
    precision: str = "fp32",
    optimizer: str = "adamw",
    device: str = "auto",
    on_step: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Train `steps` steps after `warmup_steps` and return the calibration point (a dict).
    `on_step(done, total)` is called after each step, warm-up included."""
    _check_options(hf_config, module, precision, optimizer)
    torch = _torch()
    dev = _device(torch, device)
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    torch.manual_seed(0)
    net, make_batch, builder, label = _network(torch, dev, hf_config, module, name, input_shape, seq_len)
    net = net.to(dev)
    net.train()
    trained = sum(p.numel() for p in net.parameters() if p.requires_grad)
    frozen = sum(p.numel() for p in net.parameters() if not p.requires_grad)
    run = _Steps(micro_batch, steps, warmup_steps, precision, optimizer)
    step_s = _timed_step_s(torch, dev, net, make_batch, run, on_step)
    out: dict[str, Any] = {
        "kind": POINT_FILE_KIND,
        "model": label,
        "model_kind": "lm" if hf_config else "profile",
        "builder": builder,
        "device": dev,
        "precision": precision,
        "optimizer": optimizer,
        "micro_batch": micro_batch,
        "num_gpus": 1,
        "steps": steps,
        "warmup_steps": warmup_steps,
        "step_time_s": step_s,
        "samples_per_s": micro_batch / step_s,
        "trained_params": trained,
        "frozen_params": frozen,
        "torch": torch.__version__,
    }
    if hf_config is not None:
        out.update(seq_len=seq_len, tokens_per_s=micro_batch * seq_len / step_s)
    out.update(_memory(torch, dev, rss0))
    return emit(MeasureOutput, out)


def _check_options(hf_config: str | None, module: str | None, precision: str, optimizer: str) -> None:
    """One model source, a precision and an optimizer measure knows."""
    if (hf_config is None) == (module is None):
        raise ConfigError("give exactly one of --hf-config or --module")
    if precision not in _DTYPES:
        raise ConfigError(f"--precision: {precision!r} is not allowed; allowed: {', '.join(_DTYPES)}")
    if optimizer not in ("adamw", "sgd"):
        raise ConfigError(f"--optimizer: {optimizer!r} is not allowed; allowed: adamw, sgd")


def _device(torch: Any, device: str) -> str:
    """cpu or cuda: `device`, or with auto the GPU when there is one."""
    dev = ("cuda" if torch.cuda.is_available() else "cpu") if device == "auto" else device
    if dev not in ("cpu", "cuda") or (dev == "cuda" and not torch.cuda.is_available()):
        raise ConfigError(
            f"--device: {device!r} is not available; allowed: auto, cpu"
            + (", cuda" if torch.cuda.is_available() else "")
        )
    return dev


def _network(
    torch: Any,
    dev: str,
    hf_config: str | None,
    module: str | None,
    name: str | None,
    input_shape: tuple[int, ...] | None,
    seq_len: int,
) -> tuple[Any, Callable[[int], tuple[Any, ...]], str, str]:
    """(the network, make_batch(b), how it was built, its label) of a config.json or a factory."""
    if hf_config is not None:
        net, builder, vocab = _lm(torch, hf_config)

        def make_tokens(b: int) -> tuple[Any, ...]:
            return (torch.randint(0, vocab, (b, seq_len), device=dev),)

        return net, make_tokens, builder, str(hf_config)
    net, maker = _factory(str(module))
    builder, label = f"user factory {module}", name or str(module).split(":")[-1]
    if maker is not None:
        return net, maker, builder, label
    if not input_shape:
        raise ConfigError(
            "--input-shape: the factory returns no make_batch; give the shape of one sample, e.g. 3,224,224"
        )
    shape = input_shape

    def make_samples(b: int) -> tuple[Any, ...]:
        return (torch.randn(b, *shape, device=dev),)

    return net, make_samples, builder, label


def _timed_step_s(
    torch: Any,
    dev: str,
    net: Any,
    make_batch: Callable[[int], tuple[Any, ...]],
    run: _Steps,
    on_step: Callable[[int, int], None] | None,
) -> float:
    """Seconds per training step: `run.warmup_steps` untimed, then `run.steps` timed (the
    device synchronised around them; its peak memory counted from the first timed step)."""
    params = [p for p in net.parameters() if p.requires_grad]
    opt = (
        torch.optim.AdamW(params, lr=1e-4)
        if run.optimizer == "adamw"
        else torch.optim.SGD(params, lr=1e-3, momentum=0.9)
    )
    precision = run.precision
    autocast = torch.autocast(dev, dtype=getattr(torch, _DTYPES[precision]), enabled=precision != "fp32")
    scaler = torch.amp.GradScaler(dev, enabled=precision == "fp16" and dev == "cuda")

    def step() -> None:
        inputs = make_batch(run.micro_batch)
        with autocast:
            loss = _loss(torch, net(*inputs))
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)

    def sync() -> None:
        if dev == "cuda":
            torch.cuda.synchronize()

    total = run.warmup_steps + run.steps
    for done in range(1, run.warmup_steps + 1):
        step()
        if on_step is not None:
            on_step(done, total)
    sync()
    if dev == "cuda":
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    for done in range(run.warmup_steps + 1, total + 1):
        step()
        if on_step is not None:  # a callback between steps: not synchronised, cheap
            on_step(done, total)
    sync()
    return (time.perf_counter() - start) / run.steps


def _memory(torch: Any, dev: str, rss0: int) -> dict[str, Any]:
    """The point's memory fields: the device's peaks (and the catalog GPU of its name), or on
    the CPU the growth of the process's peak resident set since `rss0`."""
    if dev == "cuda":
        gpu_name = torch.cuda.get_device_name()
        try:
            gpu = resolve_gpu_id(gpu_name.replace(" ", "-"))
        except ConfigError:
            gpu = None  # not in the catalog under that name: calibrate asks for --gpu
        return dict(
            gpu=gpu,
            device_name=gpu_name,
            memory_metric="allocated",
            peak_memory_gib=torch.cuda.max_memory_allocated() / GIB,
            peak_reserved_gib=torch.cuda.max_memory_reserved() / GIB,
            note="peak memory: torch.cuda.max_memory_allocated (reserved beside it)",
        )
    rss = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0) * _KIB / GIB
    return dict(
        gpu=None,
        peak_memory_gib=None,
        memory_metric=None,
        cpu_peak_rss_growth_gib=max(rss, 0.0),
        note="measured on the CPU: no device memory; cpu_peak_rss_growth_gib is the "
        "growth of the process's peak resident set (getrusage ru_maxrss) while "
        "building and training, an upper bound of what training held",
    )


def write_point(point: dict[str, Any], path: str | Path | OutputFile) -> Path:
    """Write the calibration point as JSON (what `ccopt calibrate --from` reads), atomically and
    never over an input or a store (optimizer.files; `path` checked first unless already an
    OutputFile); the path written.

    Raises:
        ConfigError: the path is refused or the write failed, one line.
    """
    out = path if isinstance(path, OutputFile) else output_file(path, "--output")
    return out.write(json.dumps(point, indent=2, sort_keys=True) + "\n")
