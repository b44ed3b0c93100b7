"""One sentence naming the real cause when a Hugging Face model fails to load, and the fix for that cause.

Causes, checked in this order: out of memory; a damaged weights file (the only cause "download again" can fix); a
gated model (log in); offline with no cached copy; a model that needs a newer transformers; a package the model's own
code imports that is not installed; the model's own code written for another transformers version (with the version
its config names); a missing file. Anything else is
reported as it is, without advice that cannot help. Exceptions are read by type and by the messages transformers,
huggingface_hub, safetensors and torch give; nothing here imports them.
"""

from __future__ import annotations

import errno
import re

CODE_ERRORS = (AttributeError, TypeError, ImportError, NameError, NotImplementedError)
DAMAGED = ("deserializing header", "header too large", "incomplete metadata", "invalid load key", "pytorchstreamreader",
           "unexpected eof", "not a zip file", "failed finding central directory", "unable to load weights",
           "invalid json", "metadata incomplete", "safetensorerror")
NO_MEMORY = ("out of memory", "can't allocate memory", "cannot allocate memory", "outofmemory")


def first_line(e: BaseException) -> str:
    """The exception's first line, without a trailing full stop, at most 200 characters."""
    text = str(e).strip().splitlines()
    return (text[0] if text else type(e).__name__).rstrip(".")[:200]


def _chain(e: BaseException | None) -> list[BaseException]:
    """The exception and those it was raised from or during, outermost first."""
    seen: list[BaseException] = []
    while e is not None and e not in seen:
        seen.append(e)
        e = e.__cause__ or e.__context__
    return seen


def _text(e: BaseException) -> str:
    return " ".join(f"{type(x).__name__} {x}" for x in _chain(e)).lower()


def _from_remote_code(e: BaseException) -> bool:
    """Whether the traceback passes through a model's own code (transformers keeps it under transformers_modules)."""
    for x in _chain(e):
        tb = x.__traceback__
        while tb is not None:
            if "transformers_modules" in tb.tb_frame.f_code.co_filename:
                return True
            tb = tb.tb_next
    return False


def is_out_of_memory(e: BaseException) -> bool:
    """A failed allocation: torch's OutOfMemoryError, MemoryError, the CPU allocator's error, or ENOMEM."""
    for x in _chain(e):
        if isinstance(x, MemoryError) or type(x).__name__ == "OutOfMemoryError":
            return True
        if isinstance(x, OSError) and x.errno == errno.ENOMEM:
            return True
    return any(k in _text(e) for k in NO_MEMORY)


def explain(e: BaseException, name: str, *, remote_code: bool = False, placement: dict[str, str] | None = None,
            written_for: str | None = None, installed: str | None = None) -> str:
    """The sentence for a failed load of `name`: its cause and the fix for that cause (why: "download them again"
    cannot fix a library mismatch, missing memory, a gated model or an offline machine)."""
    text = _text(e)
    where = f" of {placement['device']} in {placement['dtype']}" if placement else ""
    if is_out_of_memory(e):
        return (f"{name} does not fit in the memory{where}: pick a smaller model, a 16-bit dtype or another device, "
                "or close what else is using the memory.")
    if any(k in text for k in DAMAGED):
        return (f"The weights or files of {name} are damaged or cut short ({first_line(e)}): delete them from the "
                "folder or the Hugging Face cache and download the model again.")
    if "gated repo" in text or "gatedrepoerror" in text:
        return (f"{name} is a gated model: accept its terms on its Hugging Face page, then log in on this machine "
                "(hf auth login, or set HF_TOKEN).")
    if "couldn't connect to" in text or "offline mode" in text or "localentrynotfounderror" in text:
        return (f"{name!r} is not in the Hugging Face cache and the Hub cannot be reached (offline): connect and "
                "download it once, or pass a local folder.")
    if "does not recognize this architecture" in text or ("model type" in text and "not recognize" in text):
        return (f"{name} needs a newer transformers than {installed or 'this one'} ({first_line(e)}): "
                "pip install -U transformers (or install the package whose code registers that model type).")
    missing = next((m for x in _chain(e) if (m := re.search(r"packages that were not found in your environment: "
                                                             r"([\w\-, .]+?)\.? Run", str(x)))), None)
    if missing:  # transformers' check of the imports in a model's own code
        packages = missing.group(1).replace(",", " ").split()
        return (f"{name}'s own model code imports {', '.join(packages)}, which is not installed here: "
                f"pip install {' '.join(packages)}, then load it again.")
    if isinstance(e, CODE_ERRORS) and (remote_code or _from_remote_code(e)):
        was = f"it was written for transformers {written_for}" if written_for else "it was written for another version"
        pin = (f'pip install "transformers=={written_for}"' if written_for
               else "the transformers version its model card names")
        return (f"{name}'s own model code does not run under transformers {installed or 'installed here'} "
                f"({type(e).__name__}: {first_line(e)}); {was}: run it with {pin} in an environment of its own.")
    if isinstance(e, OSError) and re.search(r"does not appear to have (a )?files? named|no file named", text):
        return f"{name} lacks a file it needs ({first_line(e)}): point at a complete model folder or id."
    return f"{name} could not be loaded ({type(e).__name__}: {first_line(e)})."
