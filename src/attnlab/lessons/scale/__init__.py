"""The scale lesson (⑦): computation and claims in lesson.py, and beside it its figure, terminal view, page and strings."""
