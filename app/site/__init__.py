"""The static site: the built-in twins racing in the visitor's browser (`python -m app site`), built from the engine."""
