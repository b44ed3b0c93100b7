"""Remote model code written for transformers 4, made loadable under transformers 5 (needs torch + transformers).

A model that ships its own Python (LLaDA, Dream: `trust_remote_code`) was written against the transformers of its
day. transformers 5 changed three things such code relies on, and `compatible` mends each on a subclass of the
loaded class, leaving the model's own computation alone:

- `post_init()` now sets `all_tied_weights_keys`, which loading reads; LLaDA's `__init__` never calls it, so the
  subclass calls it after the model's own `__init__` when the attribute is missing.
- loading calls `tie_weights(missing_keys=..., recompute_mapping=...)`; a `tie_weights(self)` of the old signature
  is called without the arguments it does not take.
- `_tied_weights_keys` is now a {tied parameter: source parameter} dict; a 4.x list of output-embedding names
  (Dream's) becomes that dict, each tied to the input embedding's weight, as 4.x tied them.
- decoder layers no longer carry `attention_type` (their attention keeps `layer_type`); code that subclasses a
  transformers model and picks each layer's mask by it (dllm's A2D Qwen3) gets it back (`restore_attention_types`).
- the config no longer keeps generation settings such as `use_cache` (they are popped on load), while an old
  `forward` reads `config.use_cache`; the value the model's files give (its config.json, else its config class's
  default, else False) is put back.

`legacy_import_names` puts back `transformers.utils.import_utils.is_torch_fx_available`, which transformers 5
removed and LLaDA2.0's code imports (true, as it was on any torch 4.x supported).

Two more mends are not on the class. `legacy_rope_default` puts back the "default" entry of
`ROPE_INIT_FUNCTIONS` (transformers 5 moved the plain RoPE into each model; Dream looks it up by name).
`fix_rotary_buffers` recomputes rotary inverse frequencies after loading: transformers 5 builds the model on the
meta device and gives non-persistent buffers no values unless the model's own `_init_weights` sets them, which
code written for 4.x does not, so Dream would run with garbage positions and return wrong logits.

`mend_generation_configs` lets a model's own GenerationConfig subclass (Dream's) take the `validate(...)`
arguments transformers 5 passes, in the model's module, since its `from_pretrained` builds one by name.

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


def compatible(cls: Any) -> type:
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

    legacy_tied = cls.__dict__.get("_tied_weights_keys", getattr(cls, "_tied_weights_keys", None))
    if isinstance(legacy_tied, (list, tuple)):
        def _tied_weights_keys(self: Any) -> dict[str, str]:
            """transformers 4's list of weights tied to the input embedding, as transformers 5's mapping."""
            try:
                weight = self.get_input_embeddings().weight
            except Exception:
                return {}
            source = next((n for n, p in self.named_parameters() if p is weight), None)
            return {k: source for k in legacy_tied if source and k != source}

        body["_tied_weights_keys"] = property(_tied_weights_keys)

    def __init__(self: Any, config: Any, *args: Any, **kwargs: Any) -> None:
        restore_use_cache(config)
        cls.__init__(self, config, *args, **kwargs)
        if "all_tied_weights_keys" not in vars(self):  # the model's __init__ skipped post_init()
            self.post_init()
        restore_attention_types(self)

    body["__init__"] = __init__
    return type(cls.__name__, (cls,), body)


def restore_attention_types(model: Any) -> int:
    """Gives each decoder layer whose attention knows its layer type the `attention_type` transformers 4 kept on the
    layer (why: old code that subclasses a transformers model, as dllm's A2D Qwen3 does, picks each layer's mask by
    it); returns how many layers it set."""
    count = 0
    for module in model.modules():
        kind = getattr(getattr(module, "self_attn", None), "layer_type", None)
        if isinstance(kind, str) and not hasattr(module, "attention_type"):
            module.attention_type = kind
            count += 1
    return count


def _default_rope(config: Any = None, device: Any = None, seq_len: int | None = None,
                  **rope_kwargs: Any) -> tuple[Any, float]:
    """transformers 4's plain RoPE inverse frequencies (its _compute_default_rope_parameters), for old model code."""
    import torch

    if rope_kwargs:
        base, dim = rope_kwargs["base"], rope_kwargs["dim"]
    else:
        params = getattr(config, "rope_parameters", None) or getattr(config, "rope_scaling", None) or {}
        base = getattr(config, "rope_theta", None) or params.get("rope_theta") or 10000.0
        head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
        dim = int(head_dim * getattr(config, "partial_rotary_factor", 1.0))
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float().to(device) / dim))
    return inv_freq, 1.0


def legacy_import_names() -> None:
    """Adds names transformers 5 removed that old model code imports, when missing (why: LLaDA2.0's modeling file
    imports `is_torch_fx_available` and fails to import at all without it)."""
    from transformers.utils import import_utils

    if not hasattr(import_utils, "is_torch_fx_available"):
        import_utils.is_torch_fx_available = lambda: True


def legacy_rope_default() -> None:
    """Adds transformers 4's "default" RoPE to ROPE_INIT_FUNCTIONS when this transformers lacks it (why: old model
    code looks it up by name; transformers 5's own models never do, so they are unaffected)."""
    from transformers import modeling_rope_utils

    modeling_rope_utils.ROPE_INIT_FUNCTIONS.setdefault("default", _default_rope)


def fix_rotary_buffers(model: Any) -> int:
    """Recomputes each rotary embedding's inverse frequencies (and attention scaling) from its config where the
    loaded buffer differs, as transformers 5 leaves non-persistent buffers of old model code unset; returns how
    many modules it fixed."""
    import torch

    fixed = 0
    for module in model.modules():
        inv = getattr(module, "inv_freq", None)
        init = getattr(module, "rope_init_fn", None)
        if not isinstance(inv, torch.Tensor) or not callable(init) or getattr(module, "config", None) is None:
            continue
        kwargs = getattr(module, "rope_kwargs", None) or {}
        want, scaling = init(module.config, inv.device, **kwargs)
        want = want.to(device=inv.device, dtype=inv.dtype)
        if inv.is_meta or want.shape != inv.shape or not torch.equal(want, inv):
            module.register_buffer("inv_freq", want, persistent=False)
            module.original_inv_freq = want
            module.attention_scaling = scaling
            fixed += 1
    return fixed


def mend_generation_configs(module_name: str) -> int:
    """In the model code's module, wraps each GenerationConfig subclass whose `validate` lacks the arguments
    transformers 5 passes, so it is called with only those it takes; returns how many it mended."""
    import sys

    from transformers import GenerationConfig

    module = sys.modules.get(module_name)
    mended = 0
    for value in list(vars(module).values()) if module else []:
        if not (isinstance(value, type) and issubclass(value, GenerationConfig) and value is not GenerationConfig):
            continue
        old = value.__dict__.get("validate")
        if old is None or getattr(old, COMPAT_FLAG, False) or _accepts(old, "user_set_attributes"):
            continue
        names = set(inspect.signature(old).parameters)

        def validate(self: Any, *args: Any, _old: Any = old, _names: set[str] = names, **kwargs: Any) -> Any:
            return _old(self, *args, **{k: v for k, v in kwargs.items() if k in _names})

        setattr(validate, COMPAT_FLAG, True)
        mending: Any = value  # a class of the model's own code, given a method
        mending.validate = validate
        mended += 1
    return mended


def remote_class(config: Any, name: str, local: bool, *keys: str) -> type | None:
    """The class the model's own code registers under the first of `keys` in its config's auto_map (such as
    "AutoModel"), mended by `compatible`; None when the auto_map names none of them."""
    from transformers.dynamic_module_utils import get_class_from_dynamic_module

    legacy_rope_default()
    legacy_import_names()
    auto_map = getattr(config, "auto_map", None) or {}
    for key in keys:
        ref = auto_map.get(key)
        if isinstance(ref, (list, tuple)):
            ref = ref[0]
        if ref:
            cls = get_class_from_dynamic_module(ref, name, local_files_only=local)
            mend_generation_configs(cls.__module__)
            for module_name in {k.__module__ for k in cls.__mro__}:
                mend_generation_configs(module_name)
            return compatible(cls)
    return None
