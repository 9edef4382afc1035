"""The flash lesson: computation and claims in lesson.py (measurements in measure.py), and beside it its figure, terminal view, page and strings."""
