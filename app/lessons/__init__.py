"""The lessons room: the guided lessons as data, the prompts the page offers, the forward-process recording and the
run the learner steps by hand (Be the sampler)."""
