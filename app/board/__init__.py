"""The board room: many prompts, one board (issue 54): two sources, or one source under several settings, raced over a
prompt set (prompts.py), each race recorded, each side's row written as it ends (run.py), and the board's tables:
medians, worst, d3LLM's AUP and the curve of quality against tokens per pass (tables.py); its CSVs are safe to open in
a spreadsheet (cells.py)."""
