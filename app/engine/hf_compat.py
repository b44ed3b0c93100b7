"""Remote model code written for transformers 4, made loadable under transformers 5 (needs torch + transformers).

A model that ships its own Python (LLaDA, Dream: `trust_remote_code`) was written against the transformers of its
day. transformers 5 changed three things such code relies on, and `compatible` mends each on a subclass of the
loaded class, leaving the model's own computation alone:

- `post_init()` now sets `all_tied_weights_keys`, which loading reads; LLaDA's `__init__` never calls it, so the
  subclass calls it after the model's own `__init__` when the attribute is missing.
- loading calls `tie_weights(missing_keys=..., recompute_mapping=...)`; a `tie_weights(self)` of the old signature
  is called without the arguments it does not take.
- the config no longer keeps generation settings such as `use_cache` (they are popped on load), while an old
  `forward` reads `config.use_cache`; the value the model's files give (its config.json, else its config class's
  default, else False) is put back.

`remote_class` resolves the class a model's `auto_map` names, so that loading goes through the mended subclass.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Any

COMPAT_FLAG = "_converge_compatible"


def _accepts(fn: Any, name: str) -> bool:
    """Whether `fn` takes a keyword argument `name` (or **kwargs)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return True
    return any(p.kind is p.VAR_KEYWORD or p.name == name for p in params)


def restore_use_cache(config: Any, name: str | None = None) -> None:
    """Puts back `config.use_cache` when transformers 5 dropped it: from the model's config.json, else the config
    class's own default, else False (why: an old forward reads it when use_cache is not passed)."""
    if "use_cache" in vars(config):
        return
    value: Any = None
    if name and (Path(name).expanduser() / "config.json").is_file():
        try:
            value = json.loads((Path(name).expanduser() / "config.json").read_text(encoding="utf-8")).get("use_cache")
        except (OSError, ValueError):
            value = None
    if value is None:
        try:
            default = inspect.signature(type(config).__init__).parameters.get("use_cache")
            value = default.default if default is not None and default.default is not inspect.Parameter.empty else None
        except (TypeError, ValueError):
            value = None
    config.use_cache = bool(value) if value is not None else False


def compatible(cls: type) -> type:
    """`cls` (a PreTrainedModel subclass from a model's own code), or a subclass of it mended for transformers 5;
    the subclass keeps the name, config class and computation of `cls` (why: old remote code fails to load)."""
    if getattr(cls, COMPAT_FLAG, False):
        return cls
    body: dict[str, Any] = {COMPAT_FLAG: True, "__module__": cls.__module__, "__qualname__": cls.__qualname__,
                            "__doc__": cls.__doc__}
    old_tie = cls.__dict__.get("tie_weights") or next(
        (k.__dict__["tie_weights"] for k in cls.__mro__ if "tie_weights" in k.__dict__), None)
    if old_tie is not None and not _accepts(old_tie, "recompute_mapping"):
        def tie_weights(self: Any, *args: Any, **kwargs: Any) -> Any:
            """The model's own tie_weights, called without the arguments transformers 5 adds."""
            return old_tie(self)

        body["tie_weights"] = tie_weights

    def __init__(self: Any, config: Any, *args: Any, **kwargs: Any) -> None:
        restore_use_cache(config)
        cls.__init__(self, config, *args, **kwargs)
        if "all_tied_weights_keys" not in vars(self):  # the model's __init__ skipped post_init()
            self.post_init()

    body["__init__"] = __init__
    return type(cls.__name__, (cls,), body)


def remote_class(config: Any, name: str, local: bool, *keys: str) -> type | None:
    """The class the model's own code registers under the first of `keys` in its config's auto_map (such as
    "AutoModel"), mended by `compatible`; None when the auto_map names none of them."""
    from transformers.dynamic_module_utils import get_class_from_dynamic_module

    auto_map = getattr(config, "auto_map", None) or {}
    for key in keys:
        ref = auto_map.get(key)
        if isinstance(ref, (list, tuple)):
            ref = ref[0]
        if ref:
            return compatible(get_class_from_dynamic_module(ref, name, local_files_only=local))
    return None
