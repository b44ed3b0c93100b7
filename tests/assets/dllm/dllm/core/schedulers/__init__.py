# Vendored unchanged below this header: dllm's scheduler module __init__.py, from GitHub ZHZisZZ/dllm, path dllm/core/schedulers/__init__.py, commit ca176752fbceec49c6b4777a2c18ae88e4eb10ed.
# The samplers above count their commits with its LinearAlphaScheduler. License: Apache-2.0 (the dllm repository).

from .alpha import (
    BaseAlphaScheduler,
    CosineAlphaScheduler,
    LinearAlphaScheduler,
    get_alpha_scheduler_class,
    make_alpha_scheduler,
)
from .kappa import (
    BaseKappaScheduler,
    CosineKappaScheduler,
    CubicKappaScheduler,
    LinearKappaScheduler,
    get_kappa_scheduler_class,
    make_kappa_scheduler,
)

__all__ = [
    "BaseAlphaScheduler",
    "CosineAlphaScheduler",
    "LinearAlphaScheduler",
    "get_alpha_scheduler_class",
    "make_alpha_scheduler",
    "BaseKappaScheduler",
    "CosineKappaScheduler",
    "CubicKappaScheduler",
    "LinearKappaScheduler",
    "get_kappa_scheduler_class",
    "make_kappa_scheduler",
]
