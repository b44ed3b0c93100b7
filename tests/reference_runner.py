"""Runs a family's own reference sampler on a saved tiny model, in the environment its authors pinned.

Started by tests/test_hf_reference_env.py with that environment's interpreter (scripts/reference_env.sh), never
imported by the suite: `python tests/reference_runner.py '{"family": ..., "folder": ..., "prompt": [...], ...}'`
prints {"ids": [...], "transformers": VERSION}. Each family is called as its model card shows: LLaDA through
generate() from its generate.py (vendored in tests/assets/llada/), Dream through model.diffusion_generate(...) with
keyword arguments.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path


def main() -> None:
    """Loads the model with its own code under this interpreter's transformers and prints the answer's ids."""
    import torch
    import transformers

    job = json.loads(sys.argv[1])
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
