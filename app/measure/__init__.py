"""The live measurement room: what is timed or scored by running the twins (or a Hugging Face model) on this machine:
the sweeps, the cost of one forward pass, and the quality helpers the bench and the lessons share."""
