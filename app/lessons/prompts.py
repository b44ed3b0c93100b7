"""The prompts the page offers: the first screen's race and the example prompts under the prompt box.

The twins write children's stories and nothing else, so the examples offered with them are story openings; a question
(`QUESTIONS`) is offered only while a side races a chat model (app/ui/race_ui.py). Each story opening is one that
neither built-in twin recites: under 5% of the 8-word runs of either twin's answers
are found verbatim in the training stories (`python -m app bench --only twins`, `page_prompts`; asserted by
tests/test_twins_quality.py). A prompt the twins recite would show the audience something the twins cannot do on
any other prompt.
"""

from __future__ import annotations

STORY = "Once upon a time, a little turtle found a map in the sand."  # the first screen's race
EXAMPLE_PROMPTS = {"A turtle's map": STORY,
                   "A tiny door": "Rosa and her brother found a tiny door in the garden wall."}
# label -> prompt; the first fills the prompt box when the page opens
QUESTIONS = {"Explain diffusion": "Explain what a diffusion language model is, in one paragraph."}
# label -> prompt: offered only with a chat model, since the twins answer any question with a story
