"""Converge's stand-in for dllm/core/__init__.py (not vendored): only the sampler and scheduler modules are vendored, so
the package imports nothing else (dllm's own __init__ pulls in its trainers, data and pipelines)."""
