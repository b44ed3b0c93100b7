"""Runs a family's own reference sampler on a saved tiny model, in the environment its authors pinned.

Started by tests/test_hf_reference_env.py with that environment's interpreter (scripts/reference_env.sh), never
imported by the suite: `python tests/reference_runner.py '{"family": ..., "folder": ..., "prompt": [...], ...}'`
prints {"ids": [...], "transformers": VERSION}. Each family is called as its model card shows: LLaDA through
generate() from its generate.py (vendored in tests/assets/llada/), Dream through model.diffusion_generate(...) with
keyword arguments, dllm's families (a2d-mdlm, a2d-bd3lm, modernbert) through dllm's MDLMSampler / BD3LMSampler
(vendored in tests/assets/dllm/) on the model dllm's get_model loads (AutoModelForMaskedLM), given the tokenizer's
mask, BOS, end-of-text and padding ids (the only parts of the tokenizer its samplers read).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

DLLM = ("a2d-mdlm", "a2d-bd3lm", "modernbert")


def dllm_answer(job: dict) -> list[int]:
    """dllm's sampler's answer: the ids after the prompt (after its left padding, for BD3LM)."""
    from types import SimpleNamespace

    import torch
    import transformers

    sys.path.insert(0, str(Path(__file__).parent / "assets" / "dllm"))
    import dllm.core.samplers as samplers

    model = transformers.AutoModelForMaskedLM.from_pretrained(job["folder"], trust_remote_code=True).eval()
    tok = SimpleNamespace(**job["tokens"])
    prompt = job["prompt"]
    if job["family"] == "a2d-bd3lm":
        config = samplers.BD3LMSamplerConfig(max_new_tokens=job["length"], steps=job["steps"], block_size=job["block"],
                                             temperature=0.0)
        row = samplers.BD3LMSampler(model=model, tokenizer=tok).sample([prompt], config)[0].tolist()
        return row[(-len(prompt)) % job["block"] + len(prompt):]
    config = samplers.MDLMSamplerConfig(max_new_tokens=job["length"], steps=job["steps"], block_size=job["block"],
                                        temperature=0.0)
    with torch.no_grad():
        return samplers.MDLMSampler(model=model, tokenizer=tok).sample([prompt], config)[0, len(prompt):].tolist()


def main() -> None:
    """Loads the model with its own code under this interpreter's transformers and prints the answer's ids."""
    import torch
    import transformers

    job = json.loads(sys.argv[1])
    if job["family"] in DLLM:
        print(json.dumps({"ids": dllm_answer(job), "transformers": transformers.__version__}))
        return
    model = transformers.AutoModel.from_pretrained(job["folder"], trust_remote_code=True).eval()
    prompt = torch.tensor([job["prompt"]])
    if job["family"] == "llada":
        path = Path(__file__).parent / "assets" / "llada" / "generate.py"
        spec = importlib.util.spec_from_file_location("llada_generate", path)
        reference = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(reference)
        out = reference.generate(model, prompt, steps=job["steps"], gen_length=job["length"],
                                 block_length=job["block"], temperature=0.0, mask_id=model.config.mask_token_id)
    else:
        out = model.diffusion_generate(prompt, max_new_tokens=job["length"], steps=job["steps"], temperature=0.0,
                                       alg=job["alg"], alg_temp=0.0, return_dict_in_generate=False)
    print(json.dumps({"ids": out[0, prompt.shape[1]:].tolist(), "transformers": transformers.__version__}))


if __name__ == "__main__":
    main()
