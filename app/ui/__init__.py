"""The page (layout.py) and the client-side player (player/*.js, player.css), which draws what app/view builds."""
