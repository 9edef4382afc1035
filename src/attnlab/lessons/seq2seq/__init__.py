"""The seq2seq lesson: computation and claims in lesson.py, and beside it its figure, terminal view, page and strings."""
