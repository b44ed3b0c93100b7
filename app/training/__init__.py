"""The training room: the twins' training (torch), the stories they learn from and write, and the tools that fit, pick
and average them. Only command-line entry points (`python -m app.training.MODULE`) and the bench import it; nothing
the page or a race runs does."""
