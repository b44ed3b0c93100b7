"""The view room: what the player draws, built from the trace and its analysis, below both the page and the exports,
and the player itself (player/*.js, player/player.css, theme.json), which both read from here."""
