"""Step ⑤, training: data windows, the one loop (AdamW + cross-entropy), devices, runs, and what a run leaves
on disk (`storage`: checkpoints, read back checked).

What else is here serves the loop: the token cache (`token_cache`, a faster way to make data.py's stream), the
size limit (`size`, for a model trained and one loaded), speed settings, torchrun (`distributed`), training in a
background thread (`background`) and progress reports (`progress`). What one lesson does with training lives in
that lesson's folder (the scale lesson's sweep, scaling law and emergence scores in lessons/scale/).
"""

from attnlab.train.data import TokenData, get_batch, token_stream
from attnlab.train.device import DEVICES, pick_device
from attnlab.train.loop import Probe, TrainConfig, Trainer, TrainResult, lm_loss, make_optimizer
from attnlab.train.run import Run, corpus_defaults, new_run, resume_run
from attnlab.train.storage.checkpoint import (
    Checkpoint,
    CheckpointError,
    load_checkpoint,
    load_train_state,
    save_checkpoint,
)

__all__ = [
    "Checkpoint",
    "CheckpointError",
    "DEVICES",
    "Probe",
    "Run",
    "TokenData",
    "TrainConfig",
    "TrainResult",
    "Trainer",
    "corpus_defaults",
    "get_batch",
    "lm_loss",
    "load_checkpoint",
    "load_train_state",
    "make_optimizer",
    "new_run",
    "pick_device",
    "resume_run",
    "save_checkpoint",
    "token_stream",
]
