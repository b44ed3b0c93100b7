"""The Hugging Face room: loading a model from the Hub or a folder (models.py), its first download, why a load failed,
and the families that decode their own way (LLaDA2.x, DiffusionGemma, block diffusion). It builds on the engine and
never on training."""
