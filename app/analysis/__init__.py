"""The analysis room: what changed at each step and the metrics (changes.py, states.py), panel titles and a recording
as pandas tables. It reads recorded frames only (the trace); what is measured by running the twins is app/measure."""
