"""The sources room: every kind of source a side can race (the twins, Hugging Face models, Mercury, any
OpenAI-compatible model, a replay), behind one interface and one registry (base.py)."""
