"""How results are shown outside the web pages: honest rounding (`fmt`) and notebook HTML (`notebook`).

from attnlab.display import Weights
Weights(weights, tokens)             # attention weights as a heatmap in a notebook cell
"""

from attnlab.display.notebook import Weights, html_of, trace_html

__all__ = ["Weights", "html_of", "trace_html"]
