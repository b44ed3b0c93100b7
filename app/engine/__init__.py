"""The local models: a numpy transformer, its samplers, and (with torch) training."""
