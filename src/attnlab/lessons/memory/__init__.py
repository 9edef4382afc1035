"""The memory lesson (⑦): computation and claims in lesson.py, measurements in measure.py, and beside them its figure, terminal view, page and strings."""
