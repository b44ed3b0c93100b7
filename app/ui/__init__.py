"""The page (layout.py), the client-side player (player.js, player.css) and the data it draws (payload.py)."""
