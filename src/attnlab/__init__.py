"""attnlab (注意力实验室): a Transformer you can see, compute by hand, run, train and break."""

__version__ = "0.1.0"
