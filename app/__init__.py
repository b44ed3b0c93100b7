"""Converge: watch a diffusion language model converge, side by side with an autoregressive model typing."""

__version__ = "0.1.0"
