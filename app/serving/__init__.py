"""The serving room: the trust level the page runs at and the size of everything a visitor may send."""
