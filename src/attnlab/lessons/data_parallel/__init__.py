"""The data-parallel lesson (⑦): two processes under torchrun against one; what the all-reduce sends; what ZeRO,
tensor and pipeline parallelism split instead. Computation and claims in lesson.py, beside it the rest."""
