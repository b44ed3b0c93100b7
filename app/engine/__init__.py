"""The local models: a numpy transformer, its tokenizer, its samplers (masked diffusion, uniform-state, autoregressive)
and what they share; it imports nothing of the app but app.errors, so any room can run a twin."""
