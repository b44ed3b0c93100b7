"""Exports of a recorded race: a video (GIF, MP4) drawn like the page, and a self-contained HTML player."""
