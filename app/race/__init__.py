"""The race room: two sources on two threads with a recorder (run.py), the CPU slots local models share, and the race's
time limit."""
