"""The trace room: frames and the JSON Lines recording (frames.py), where recordings live (store.py), the library of
recordings on disk, and the scrubber that keeps keys out of all of them."""
