"""Step ⑤: the one training loop (CLI and web both run this; the lessons' small runs: attnlab.train.small).

Each step: forward (steps ① to ④) -> cross-entropy against the next token -> backward -> AdamW update
  θ <- θ - lr · (Adam's step direction + weight_decay · θ).
A model with MoE layers (GPTConfig.ffn = "moe") is trained on cross-entropy + balance_loss · aux, aux being its
layers' load-balancing losses; every loss the loop reports (train and validation) is the plain cross-entropy.
Deterministic for a seed: the model is built after torch.manual_seed(seed), and batches are drawn from a
generator of their own, seeded the same way.
Under torchrun (attnlab.train.distributed) the same loop runs in every process: each takes its share of the
batch, DDP averages the gradients in backward, and the reported loss is the mean over the processes.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields

import torch
import torch.nn.functional as F

from attnlab.io.threads import threads_for
from attnlab.train import distributed as ddp
from attnlab.train import speed
from attnlab.train.data import TokenData, get_batch

SCHEDULES = ("constant", "cosine")


@dataclass
class TrainConfig:
    steps: int = 300  # optimizer updates in all (a resumed run continues up to this number)
    batch_size: int = 12  # windows per step (a text shorter than the context is one window)
    lr: float = 1e-3  # peak learning rate
    schedule: str = "cosine"  # constant | cosine (decay to min_lr_ratio * lr at the last step)
    warmup_steps: int = 0  # linear warm-up from ~0 to lr
    min_lr_ratio: float = 0.1
    weight_decay: float = 0.1  # AdamW's decoupled decay, on matrices only (not biases, not LayerNorm)
    beta1: float = 0.9
    beta2: float = 0.99
    grad_clip: float | None = 1.0  # clip the gradient's global norm (None: never)
    seed: int = 0
    eval_interval: int = 0  # steps between validation estimates (0: only at the end)
    eval_iters: int = 20  # batches per validation estimate
    log_interval: int = 1  # steps between progress events (the loss is read from the device only then)
    precision: str = "auto"  # auto | fp32 | bf16 (autocast); auto: bf16 on CUDA, fp32 on the CPU
    compile: bool = False  # torch.compile the model (worth it for long runs; the first step waits)
    minutes: float | None = None  # wall-clock budget of one run() call; the cosine schedule ends on time
    patience: int = 0  # stop after this many validation estimates without a new best (0: never)
    keep_best: bool = False  # end with the weights of the best validation estimate (the last ones kept to resume)

    def __post_init__(self) -> None:
        for name in ("steps", "batch_size", "eval_iters", "log_interval"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a whole number >= 1, got {value!r}")
        for name in ("warmup_steps", "eval_interval"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be a whole number >= 0, got {value!r}")
        if not (isinstance(self.lr, (int, float)) and math.isfinite(self.lr) and 0 < self.lr <= 1):
            raise ValueError(f"lr must be in (0, 1], got {self.lr!r}")
        if self.schedule not in SCHEDULES:
            raise ValueError(f"schedule must be one of {SCHEDULES}, got {self.schedule!r}")
        if not 0 <= self.min_lr_ratio <= 1:
            raise ValueError(f"min_lr_ratio must be in [0, 1], got {self.min_lr_ratio!r}")
        if self.weight_decay < 0:
            raise ValueError(f"weight_decay must be >= 0, got {self.weight_decay!r}")
        if not (0 <= self.beta1 < 1 and 0 <= self.beta2 < 1):
            raise ValueError(f"beta1 and beta2 must be in [0, 1), got {self.beta1!r}, {self.beta2!r}")
        if self.grad_clip is not None and self.grad_clip <= 0:
            raise ValueError(f"grad_clip must be > 0 or None, got {self.grad_clip!r}")
        if not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"seed must be a whole number >= 0, got {self.seed!r}")
        if self.precision not in speed.PRECISIONS:
            raise ValueError(f"precision must be one of {speed.PRECISIONS}, got {self.precision!r}")
        if not isinstance(self.compile, bool):
            raise ValueError(f"compile must be true or false, got {self.compile!r}")
        if self.minutes is not None and not (isinstance(self.minutes, (int, float)) and 0 < self.minutes < math.inf):
            raise ValueError(f"minutes must be > 0, got {self.minutes!r}")
        if not isinstance(self.patience, int) or isinstance(self.patience, bool) or self.patience < 0:
            raise ValueError(f"patience must be a whole number >= 0, got {self.patience!r}")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> TrainConfig:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})

    def lr_at(self, step: int, time_progress: float = 0.0) -> float:
        """Learning rate for update number `step` (0-based): warm-up, then constant or cosine decay. With a
        time budget the decay follows whichever runs out first, the steps or the time (time_progress in [0, 1])."""
        if step < self.warmup_steps:
            return self.lr * (step + 1) / (self.warmup_steps + 1)
        if self.schedule == "constant":
            return self.lr
        span = max(1, self.steps - 1 - self.warmup_steps)
        progress = min(1.0, max((step - self.warmup_steps) / span, time_progress))
        min_lr = self.lr * self.min_lr_ratio
        return min_lr + 0.5 * (1 + math.cos(math.pi * progress)) * (self.lr - min_lr)


def make_optimizer(model: torch.nn.Module, cfg: TrainConfig) -> torch.optim.AdamW:
    """AdamW with weight decay on the weight matrices and embedding tables only (as GPT-2 and nanoGPT do).
    The same update, run by the kernel that is fastest where the parameters live (attnlab.train.speed)."""
    params = [p for p in model.parameters() if p.requires_grad]
    decay = [p for p in params if p.dim() >= 2]
    no_decay = [p for p in params if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    kernel = speed.adamw_kernel(params[0].device if params else "cpu", sum(p.numel() for p in params))
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=(cfg.beta1, cfg.beta2), **kernel)


@dataclass
class Probe:
    """Watch one prediction while training: p(target | context), e.g. p(光 | 床前明月)."""

    context_ids: list[int]
    target_id: int
    context: str = ""
    target: str = ""


@dataclass
class TrainResult:
    step: int  # updates done so far (including any before a resume)
    loss: float | None  # the last training batch's loss
    val_loss: float | None
    p_probe: float | None
    stopped: bool  # stopped before cfg.steps: on request, out of time, or out of patience
    seconds: float
    history: list[dict] = field(default_factory=list)
    stop_reason: str | None = None  # "asked", "time", "patience" (None: ran all its steps)
    best_val_loss: float | None = None  # the lowest validation estimate so far
    best_step: int | None = None
    restored_best: bool = False  # the model now holds the best estimate's weights (keep_best)


def lm_loss(model, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy -log p(y_t | x_<=t) over every position of every window."""
    logits = model(x)  # (B, T, V)
    return F.cross_entropy(logits.flatten(0, 1).float(), y.flatten())  # (B*T, V) vs (B*T,), in fp32 under bf16


class Trainer:
    """Holds a model, its optimizer and the batch generator; `run()` trains up to cfg.steps."""

    def __init__(
        self,
        model: torch.nn.Module,
        data: TokenData,
        cfg: TrainConfig,
        *,
        device: torch.device | str = "cpu",
        probe: Probe | None = None,
        clock: Callable[[], float] = time.perf_counter,
    ):
        self.model = model.to(device)
        self.data, self.cfg, self.device, self.probe = data, cfg, torch.device(device), probe
        self.context_length = model.config.context_length
        self.precision = speed.resolve_precision(cfg.precision, self.device)  # 'fp32' or 'bf16'
        speed.use_tf32(self.device)
        # The token ids live where the model does: a step gathers its windows there (no batch copied per step).
        # Checked once here, on the CPU: on a GPU the model trusts its ids rather than wait to read them each step.
        vocab = getattr(model.config, "vocab_size", None)
        for stream in (s for s in (data.train, data.val) if vocab is not None and s is not None and len(s)):
            low, high = int(stream.min()), int(stream.max())
            if low < 0 or high >= vocab:
                raise ValueError(f"token ids must be in [0, {vocab}): the corpus has ids from {low} to {high}")
        self.train_tokens = data.train.to(self.device)
        self.val_tokens = data.val.to(self.device) if data.val is not None else None
        self._optimizer: torch.optim.AdamW | None = None  # made on first use (see optimizer)
        self.batch_generator = torch.Generator().manual_seed(cfg.seed)  # the same on every rank and device
        self.rank, self.world_size = ddp.rank(), ddp.world_size()  # 0, 1 outside torchrun
        # DDP syncs gradients; self.model stays the plain GPT (evaluation, probes and checkpoints use it)
        self.train_model = speed.maybe_compile(ddp.wrap(self.model), cfg.compile)
        self.step = 0
        self.history: list[dict] = []
        self.clock = clock  # seconds; injectable, so a time budget can be tested without waiting
        self.best: dict | None = None  # {"val_loss", "step", "weights" (CPU copies)} of the best estimate
        self.last_weights: dict | None = None  # the last step's weights while the model holds the best ones
        self.evals_since_best = 0

    @property
    def optimizer(self) -> torch.optim.AdamW:
        """Made on first use: a run that only shows its untrained model needs none, and torch's first optimizer
        in a process imports torch._dynamo (seconds on a small CPU: most of /pipeline's first visit)."""
        if self._optimizer is None:
            self._optimizer = make_optimizer(self.model, self.cfg)
        return self._optimizer

    @optimizer.setter
    def optimizer(self, optimizer: torch.optim.Optimizer) -> None:  # another update rule, e.g. to compare kernels
        self._optimizer = optimizer

    # -- measurements ---------------------------------------------------------------------------------

    @torch.no_grad()
    def estimate_val_loss(self) -> float | None:
        """Mean loss over eval_iters validation batches, always the same batches (a fixed generator).
        With several processes each evaluates every world_size-th batch and all get the same mean."""
        if self.val_tokens is None:
            return None
        was_training = self.model.training
        self.model.eval()
        g = torch.Generator().manual_seed(self.cfg.seed + 1)
        losses = []
        for i in range(self.cfg.eval_iters):
            x, y = get_batch(
                self.val_tokens,
                self.context_length,
                self.cfg.batch_size,
                g,
                allowed=getattr(self.data, "val_starts", None),
            )
            if i % self.world_size == self.rank:
                with speed.autocast(self.precision, self.device):
                    losses.append(lm_loss(self.model, x, y))
            if len(self.val_tokens) - 1 <= self.context_length:
                break  # the one whole window: every batch would be the same
        self.model.train(was_training)
        total, count = ddp.all_sum([sum(float(loss) for loss in losses), len(losses)])  # one wait, after the last batch
        return total / count

    @torch.no_grad()
    def probe_prob(self) -> float | None:
        if self.probe is None:
            return None
        was_training = self.model.training
        self.model.eval()
        ids = self.probe.context_ids[-self.context_length :]
        logits = self.model(torch.tensor([ids], device=self.device))[0, -1]  # (V,)
        self.model.train(was_training)
        return float(torch.softmax(logits.float(), dim=-1)[self.probe.target_id])

    # -- the loop -------------------------------------------------------------------------------------

    def run(
        self, callback: Callable[[dict], None] | None = None, should_stop: Callable[[], bool] | None = None
    ) -> TrainResult:
        """Train from self.step up to cfg.steps. callback(event) gets a dict after every log_interval
        steps and at the end; should_stop() is asked after every step (True ends the run early)."""
        with threads_for(self.model):
            return self._run(callback, should_stop)

    def _run(self, callback, should_stop) -> TrainResult:
        cfg, model = self.cfg, self.train_model  # with DDP, the wrapper: its backward averages the gradients
        model.train()
        if self.rank > 0:  # dropout masks of their own on the other ranks (rank 0 keeps the seed's stream)
            torch.manual_seed(ddp.rank_seed(cfg.seed, self.rank, self.step))
        start, loss_value, stopped, val_loss, reason = self.clock(), None, False, None, None
        budget = 60 * cfg.minutes if cfg.minutes else None
        self._unrestore()  # continue from the last step's weights, not the best ones shown
        while self.step < cfg.steps:
            lr = cfg.lr_at(self.step, min(1.0, (self.clock() - start) / budget) if budget else 0.0)
            loss = self.train_step(model, lr)  # self.step += 1

            last = self.step == cfg.steps
            asked = not last and should_stop is not None and should_stop()
            out_of_time = not last and budget is not None and self.clock() - start >= budget
            stopped = asked or out_of_time
            if not last:
                stopped = ddp.any_rank(stopped)  # all ranks stop after the same step, or none does
            reason = ("asked" if asked else "time") if stopped else None
            evaluate = last or stopped or (cfg.eval_interval and self.step % cfg.eval_interval == 0)
            if evaluate or self.step % cfg.log_interval == 0 or self.step == 1:
                # Reading the loss waits for the device to finish; only logged steps pay that wait.
                loss_value = ddp.all_mean(loss.item())  # the global batch's loss
                val_loss = self.estimate_val_loss() if evaluate else None
                if val_loss is not None and self._note_val(val_loss) and not last and not stopped:
                    stopped, reason = True, "patience"  # the same on every rank: they share the estimate
                event = {
                    "type": "step",
                    "step": self.step,
                    "steps": cfg.steps,
                    "loss": loss_value,
                    "lr": lr,
                    "p_probe": self.probe_prob(),
                    "val_loss": val_loss,
                    "best_val_loss": self.best["val_loss"] if self.best else None,
                    "seconds": self.clock() - start,
                }
                self.history.append({k: event[k] for k in ("step", "loss", "val_loss", "p_probe")})
                if callback is not None:
                    callback(event)
            if stopped:
                break

        restored = self.restore_best() if cfg.keep_best else False
        result = TrainResult(
            step=self.step,
            loss=loss_value,
            val_loss=val_loss,
            p_probe=self.probe_prob(),
            stopped=stopped,
            seconds=self.clock() - start,
            history=self.history,
            stop_reason=reason,
            best_val_loss=self.best["val_loss"] if self.best else None,
            best_step=self.best["step"] if self.best else None,
            restored_best=restored,
        )
        if callback is not None:
            callback({"type": "done", **{k: v for k, v in asdict(result).items() if k != "history"}})
        return result

    def train_step(self, model: torch.nn.Module | None = None, lr: float | None = None) -> torch.Tensor:
        """Update number self.step on the next batch: forward, loss, backward, clip, AdamW; then self.step += 1.
        Returns the loss, still on the device (reading it waits for the device). `model` is what runs forward
        (the DDP or compiled wrapper; default self.train_model), `lr` the rate (default: the schedule's)."""
        cfg, model = self.cfg, self.train_model if model is None else model
        lr = cfg.lr_at(self.step) if lr is None else lr
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        x, y = get_batch(
            self.train_tokens,
            self.context_length,
            cfg.batch_size,
            self.batch_generator,
            rank=self.rank,
            world_size=self.world_size,
            allowed=getattr(self.data, "train_starts", None),
        )  # this rank's share of the batch
        with speed.autocast(self.precision, self.device):
            loss = lm_loss(model, x, y)
        objective = loss + self.balance_term()  # a MoE model also pays for uneven routing; loss stays the LM's
        self.optimizer.zero_grad(set_to_none=True)
        objective.backward()  # d objective / d θ for every parameter (DDP: averaged over the ranks)
        if cfg.grad_clip is not None:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), cfg.grad_clip)
        self.optimizer.step()  # θ <- θ - lr · update
        self.step += 1
        return loss.detach()

    def balance_term(self) -> torch.Tensor | float:
        """balance_loss · aux after a forward of a model with MoE layers (attnlab.nn.moe: E · Σ f_i P_i per
        layer, summed), else 0. Only the gradient sees it: the loss the loop reports is the plain cross-entropy."""
        aux = getattr(self.model, "aux_loss", None)
        weight = getattr(self.model.config, "balance_loss", 0.0)
        return weight * aux if isinstance(aux, torch.Tensor) and weight else 0.0

    # -- the best weights -----------------------------------------------------------------------------

    def _weights(self) -> dict:
        return {k: v.detach().to("cpu", copy=True) for k, v in self.model.state_dict().items()}

    def _note_val(self, val_loss: float) -> bool:
        """Record an estimate (a copy of the weights when it is the best so far, with keep_best); True when
        `patience` estimates in a row have not beaten the best."""
        if self.best is None or val_loss < self.best["val_loss"]:
            self.best = {
                "val_loss": val_loss,
                "step": self.step,
                "weights": self._weights() if self.cfg.keep_best else None,
            }
            self.evals_since_best = 0
            return False
        self.evals_since_best += 1
        return self.cfg.patience > 0 and self.evals_since_best >= self.cfg.patience

    def restore_best(self) -> bool:
        """Put the best estimate's weights in the model, keeping the last step's to resume from. True if done."""
        if self.best is None or self.best.get("weights") is None or self.best["step"] == self.step:
            return False
        if self.last_weights is None:
            self.last_weights = self._weights()
        self.model.load_state_dict(self.best["weights"])
        return True

    def _unrestore(self) -> None:
        if self.last_weights is not None:
            self.model.load_state_dict(self.last_weights)
            self.last_weights = None

    # -- resuming -------------------------------------------------------------------------------------

    def state(self) -> tuple[dict, dict]:
        """(json-able scalars, tensors) that let a later run continue exactly where this one stopped."""
        opt = self.optimizer.state_dict()
        tensors = {
            f"optimizer.{i}.{name}": t.detach().cpu().contiguous()
            for i, st in opt["state"].items()
            for name, t in st.items()
        }
        tensors["rng.batches"] = self.batch_generator.get_state()
        tensors["rng.torch"] = torch.get_rng_state()
        groups = [{k: (list(v) if isinstance(v, tuple) else v) for k, v in g.items()} for g in opt["param_groups"]]
        scalars = {"step": self.step, "param_groups": groups, "history": self.history}
        if self.best is not None:
            scalars["best"] = {
                "val_loss": self.best["val_loss"],
                "step": self.best["step"],
                "evals_since": self.evals_since_best,
            }
        if self.last_weights is not None:  # the model holds the best weights: keep the last ones to resume
            tensors.update({f"last.{k}": v.contiguous() for k, v in self.last_weights.items()})
        return scalars, tensors

    def load_state(self, scalars: dict, tensors: dict) -> None:
        state: dict[int, dict] = {}
        for key, t in tensors.items():
            if key.startswith("optimizer."):
                _, i, name = key.split(".", 2)
                state.setdefault(int(i), {})[name] = t  # load_state_dict moves them to the parameters' device
        groups = [{k: (tuple(v) if k == "betas" else v) for k, v in g.items()} for g in scalars["param_groups"]]
        self.optimizer.load_state_dict({"state": state, "param_groups": groups})
        self.batch_generator.set_state(tensors["rng.batches"])
        torch.set_rng_state(tensors["rng.torch"])
        self.step = int(scalars["step"])
        self.history = list(scalars.get("history", []))
        best = scalars.get("best")
        if isinstance(best, dict) and isinstance(best.get("val_loss"), (int, float)):
            last = {k[len("last.") :]: t for k, t in tensors.items() if k.startswith("last.")}
            # the model was saved holding the best weights when `last.*` is there, else the last ones
            self.best = {
                "val_loss": float(best["val_loss"]),
                "step": int(best.get("step", 0)),
                "weights": self._weights() if last or best.get("step") == self.step else None,
            }
            self.evals_since_best = int(best.get("evals_since", 0))
            if last:
                self.last_weights = {k: t.to(self.device) for k, t in last.items()}
