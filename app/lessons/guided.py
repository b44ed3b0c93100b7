"""The guided lessons: each sets up a race that runs offline, points at one part of the page, explains it in
two or three plain sentences, and offers one change to try.

Lessons are data, so the page, the tests and the docs all read the same list. Settings are the sources'
own (see app/sources/local.py); anything a lesson does not set keeps the page's default. Written for someone
who has never heard of masked diffusion: by the end they can say what a step is, what the threshold trades
and why blocks exist.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.engine.draft import Revision
from app.lessons.prompts import STORY
from app.trace.store import EXAMPLES_DIR

MERCURY_EXAMPLE = EXAMPLES_DIR / "04-mercury-wire-format.jsonl"
MERCURY_EXAMPLE_ID = f"example/{MERCURY_EXAMPLE.name}"  # replay: takes library names on the page
FORWARD_EXAMPLE = EXAMPLES_DIR / "01-confidence-blocks.jsonl"  # the answer the forward-process lesson masks

# one token per step, 4 blocks
SHORT = {"gen_length": 64, "steps": 64, "block_length": 16, "threshold": 0.0, "filter": 0.0}
AR64 = {"gen_length": 64}
# The diffusion twin's settings when these lessons were measured (tests/test_lesson_claims.py): sampled at 0.5, the
# learned filter at 0.6, the stutter guard on, no run guard, no commit spacing. Each lesson's diffusion side starts from
# them, so what it shows stays what its test checks when the page's own defaults (app/sources/local.py) move.
LESSON_TWIN = {"temperature": 0.5, "filter": 0.6, "no_repeat": True, "no_repeat_ngram": 0, "min_gap": 1,
               "min_length": 1}

# "Diffusion revises": a held-out training story (app/training/stories.py, the split the twins were trained with;
# its first sentence the prompt, its next 64 tokens the draft, cut at a token: tests/test_lesson_claims.py checks
# both), with three planted mistakes that keep its token count: "birds" and "trees" swapped, and "Sam" for "Jack".
REVISE_PROMPT = "Once upon a time, a little boy called Jack was playing in his garden."
REVISE_STORY = (" He heard some birds chirping in the trees. He was about to go and take a closer look when his mum "
                "called him. She shouted, \"Jack! Come and get a seat for dinner.\"\n\nJack ran into the house and sat "
                "on a seat at the table. But he didn't like it very")
REVISE_DRAFT = (" He heard some trees chirping in the birds. He was about to go and take a closer look when his mum "
                "called him. She shouted, \"Sam! Come and get a seat for dinner.\"\n\nJack ran into the house and sat "
                "on a seat at the table. But he didn't like it very")


@dataclass(frozen=True)
class Lesson:
    """One lesson: the race it sets up, the part of the page it points at, what it says and what to try."""

    title: str
    text: str
    point: str  # a CSS selector for the part of the page the lesson is about (a part of the player, or #sampler)
    look: str  # where to look, in words (the spotlight says the same thing visually)
    try_it: str  # the change to make, in words
    try_side: str  # the side the change applies to ("left" or "right")
    try_settings: dict[str, Any]  # the same change as settings, applied by the "Try it" button
    left: str = "local-diffusion"
    right: str = "local-ar"
    left_settings: dict[str, Any] = field(default_factory=lambda: dict(SHORT))
    right_settings: dict[str, Any] = field(default_factory=lambda: dict(AR64))
    prompt: str = STORY
    pins: str = ""  # the page's pins box (one POSITION:TEXT a line); only the diffusion side uses it
    noising: Path | None = None  # a recording whose diffusion answer is masked step by step
    # (app/lessons/forward_process.py) and shown in the player when the lesson is chosen, before its race
    figures: tuple[str, ...] = ()  # the measurements its text quotes (app/lessons/figures.py FIGURES), shown on the
    # page when its race ends
    board: int = 0  # a board lesson: both sides (at their settings) raced over the first `board` held-out story
    # openings (app/board/stories.txt) in the page's Board section instead of one race; 0: one race, on `prompt`
    draft: Revision | None = None  # the draft both sides start from (issue 53), instead of the page's "Start from" box
    story: str = ""  # the held-out story's own words the draft's planted mistakes replace (same token count), so the
    # figures can count the mistakes fixed

    def sources(self) -> dict[str, tuple[str, dict[str, Any]]]:
        """Each side's source spec and settings before the change."""
        def side(spec: str, settings: dict[str, Any]) -> tuple[str, dict[str, Any]]:
            return spec, ({**LESSON_TWIN, **settings} if spec == "local-diffusion" else dict(settings))

        return {"left": side(self.left, self.left_settings), "right": side(self.right, self.right_settings)}

    def changed(self) -> dict[str, tuple[str, dict[str, Any]]]:
        """Each side's source spec and settings after the "try it" change."""
        out = self.sources()
        spec, settings = out[self.try_side]
        out[self.try_side] = (spec, {**settings, **self.try_settings})
        return out


def part(name: str) -> str:
    """The selector of a part of the player (the player marks them with data-part)."""
    return f'[data-part="{name}"]'


LESSONS: list[Lesson] = [
    Lesson(
        title="An autoregressive model types left to right",
        text="The right panel is the autoregressive (AR) twin: it writes one token (a word or a piece of one) at "
             "a time, always at the end, and never goes back. Each token costs one forward pass, one run of the "
             "network over the text so far.",
        point=part("panel-right"), look="the right panel",
        try_it="Set the AR twin's temperature to 0.8 and run again: it now samples each next token instead of "
               "taking the likeliest, so the story changes, but it still grows strictly from left to right.",
        try_side="right", try_settings={"temperature": 0.8},
    ),
    Lesson(
        title="A diffusion model starts from a fully masked canvas",
        text="The left panel is the masked-diffusion twin. Its answer starts as a row of blank, masked positions "
             "(grey), and each step the model guesses every masked position at once and keeps only some of its "
             "guesses, here one a step (later lessons keep more). Scrub back to the first frame to see the empty "
             "canvas.",
        point=part("panel-left"), look="the left panel",
        try_it="Set the left answer length to 128 and run again: the canvas is twice as long and is filled in "
               "the same way, one position per step, until the story is complete (the run stops early there).",
        try_side="left", try_settings={"gen_length": 128, "steps": 128},
    ),
    Lesson(
        title="The forward process: what the model learned to undo",
        text="A masked-diffusion model is trained on finished text with a random share t of its positions masked "
             "(t = 0.35 masks about 35%), and learns to restore them. When this lesson opens, the left panel plays "
             "that forward process on an answer the twin wrote, t rising from 0 to 1 and every masked position "
             "staying masked, beside the twin's own run that wrote it. Decoding is the same process backwards, "
             "as this lesson's race shows without the t line: the twin unmasks one position a step, in a random "
             "order, from all 64 masked (t = 1) to none (t = 0).",
        point=part("panel-left"), look="the left panel: t and the share masked, above the text",
        try_it="Set the left steps to 16 and run again: each step now unmasks about 4 of the 64 positions, "
               "so t falls by 1/16 a step instead of 1/64.",
        try_side="left", try_settings={"steps": 16},
        left_settings={**SHORT, "block_length": 64, "scoring": "random"},
        noising=FORWARD_EXAMPLE, figures=("passes", "per_pass"),
    ),
    Lesson(
        title="A step is one forward pass",
        text="A step runs the network once over the prompt and the whole partly masked answer, which gives a "
             "guess and a confidence for every masked position. The sampler then commits some of those guesses "
             "and leaves the rest masked for the next step. The metrics count the forward passes.",
        point=part("metrics"), look="the metrics table (forward passes, tokens per forward pass)",
        try_it="Set the left steps to 8: each step must now commit 8 of the 64 tokens, so the answer takes an "
               "eighth of the forward passes. Compare the text with the 64-step run: words go missing. (At 16 steps, "
               "4 a step, this twin's text barely changes: it learned to be right about several tokens together.)",
        try_side="left", try_settings={"steps": 8}, figures=("passes", "per_pass"),
    ),
    Lesson(
        title="Reading the heatmap",
        text="Each heatmap has one row per frame (time runs down) and one column per position in the answer. "
             "A cell is coloured when that position changed in that frame: newly unmasked, changed, or masked "
             "again, as the legend says. The AR heatmap is a diagonal; the diffusion one shows the order the "
             "model chose.",
        point=part("heatmap-left"), look="the heatmaps under the panels and their legend",
        try_it="Set the left block length to 64 (one block for the whole answer) and run again: the cells can "
               "now appear anywhere in the row, not only inside the current block of 16.",
        try_side="left", try_settings={"block_length": 64},
    ),
    Lesson(
        title="Which positions get committed: confidence, margin, entropy or random",
        text="Each step the sampler ranks the masked positions and commits the best-ranked ones; the others "
             "stay masked (LLaDA calls this 'low-confidence remasking': the least confident guesses are masked "
             "again). Confidence ranks by the probability of the best guess, margin by its lead over the "
             "second best, entropy by how peaked the whole guess is; random ignores the model.",
        point=part("heatmap-right"), look="the two heatmaps: same model, two orders",
        try_it="Set the right side's 'Scoring' to margin (or entropy) and run again.",
        try_side="right", try_settings={"scoring": "margin"},
        right="local-diffusion",
        left_settings={**SHORT, "block_length": 64, "scoring": "confidence"},
        right_settings={**SHORT, "block_length": 64, "scoring": "random"},
    ),
    Lesson(
        title="Blocks: why diffusion is often run semi-autoregressively",
        text="With blocks, the answer is cut into chunks that are decoded one after another from the left; "
             "inside a block, positions fill in any order. A model allowed to commit anywhere strays further from "
             "the left: here each commit lands on average about 13 positions right of the first masked one with one "
             "block of 64 (left), about 4 with blocks of 16 (right). Blocks exist because at longer lengths that "
             "freedom lets easy, far-away tokens such as end-of-text settle first (the end-of-text lesson shows it).",
        point=part("heatmap-right"), look="the right heatmap: one block at a time",
        try_it="Set the right block length to 8 and run again: decoding gets closer to left to right.",
        try_side="right", try_settings={"block_length": 8},
        right="local-diffusion",
        left_settings={**SHORT, "block_length": 64},
        right_settings={**SHORT, "block_length": 16}, figures=("stray",),
    ),
    Lesson(
        title="Steps against quality",
        text="Fewer steps means more tokens committed per forward pass, and tokens committed in the same step "
             "were guessed at the same time, without seeing each other. That is where broken grammar and missing "
             "words come from: compare the 64-step text on the left with the 8-step text on the right.",
        point=part("panel-right"), look="the two panels' text, and the forward passes in the metrics",
        try_it="Set the right steps to 32 and run again: four times the passes of 8, and text nearly as likely "
               "as 64 steps' (this twin learned to be right about several tokens together).",
        try_side="right", try_settings={"steps": 32},
        right="local-diffusion",
        right_settings={**SHORT, "steps": 8}, figures=("passes", "perplexity"),
    ),
    Lesson(
        title="Parallel decoding by threshold: tokens per forward pass",
        text="Instead of a fixed number of steps, Fast-dLLM's threshold commits every masked position whose "
             "confidence is above it (and at least one per step), so the model decides how many tokens each "
             "pass yields. The threshold trades speed for quality: lower means more tokens per pass and more "
             "mistakes. This twin learned from its own stories to be sure of several words at once, so even at "
             "Fast-dLLM's 0.9 (left) it commits about 2.6 tokens per pass, up to nine where it is sure, with text "
             "nearly as likely as the right's one token per pass; the page's defaults add its learned commit filter "
             "(the next lesson).",
        point=part("metrics"), look="'Tokens per forward pass' in the metrics",
        try_it="Set the left threshold to 0.1 and run again: eight or nine tokens per pass, and the text falls "
               "apart (the twins' referee finds it over ten times less likely than the right's).",
        try_side="left", try_settings={"threshold": 0.1},
        right="local-diffusion",  # seed 1: a race like the seeds' pooled figures (tests/test_lesson_claims.py)
        left_settings={**SHORT, "threshold": 0.9, "seed": 1},
        right_settings={**SHORT, "seed": 1}, figures=("per_pass", "most_in_one_pass", "perplexity"),
    ),
    Lesson(
        title="A learned commit rule: which guesses are already final",
        text="The twin often guesses a position's final word several passes before it is sure of it. A tiny "
             "network fitted to the twin's own decoding (Learn2PD) reads what the model shows at each masked "
             "position (its confidence, its neighbours, how long its guess has held) and commits every position "
             "it judges final, wherever it is in the block. The page's defaults use it; here it races the same "
             "twin committing one token per pass. At 0.7 it commits about three tokens per pass, up to seven in "
             "some passes and one in others, for text a little less likely than the one-per-pass run's (the "
             "referee's perplexity about a fifth higher).",
        point=part("metrics"), look="'Tokens per forward pass' in both metrics, and the left heatmap's wider steps",
        try_it="Set the left learned commit filter to 0.5 and run again: bolder, about four tokens per pass, "
               "and the text suffers more.",
        try_side="left", try_settings={"filter": 0.5},
        right="local-diffusion",  # seed 3: a race like the seeds' pooled figures (tests/test_lesson_claims.py)
        left_settings={**SHORT, "filter": 0.7, "seed": 3},
        right_settings={**SHORT, "seed": 3}, figures=("per_pass", "most_in_one_pass", "perplexity"),
    ),
    Lesson(
        title="Remasking: letting committed tokens change",
        text="In plain masked diffusion a committed token is final. ReMDM-style remasking reopens earlier tokens "
             "of the current block, more often the less sure the model was when it committed them, so a later "
             "step can correct them; the heatmap marks them as masked again.",
        point=part("heatmap-right"), look="the right heatmap: cells masked again",
        try_it="Set the right remasking to 0.9 and run again: more tokens are reopened and guessed again.",
        try_side="right", try_settings={"remask": 0.9},
        right="local-diffusion",
        right_settings={**SHORT, "remask": 0.4}, figures=("reopened",),
    ),
    Lesson(
        title="End of text: flooding, and why blocks hold it back",
        text="A diffusion model must fill every position of its canvas, so the positions after the story ends "
             "get end-of-text (shown as <eos>). End-of-text far from the prompt is an easy, confident guess: ranked "
             "by confidence (LLaDA's order) in one block of 256 (left), the twin commits over 150 <eos> "
             "within its first two passes, and the story stops after about 45 tokens. With blocks of 32 (right), "
             "nothing right of the current block can be committed, so the story runs on to about eighty tokens.",
        point=part("panel-left"), look="the <eos> marks in the left panel",
        try_it="Set the left end-of-text score factor to 0.3 and run again: end-of-text now needs a much "
               "higher score to be committed (by the schedule or the learned filter), so the story runs past a "
               "hundred tokens.",
        try_side="left", try_settings={"eos_discount": 0.3},
        right="local-diffusion",
        left_settings={"gen_length": 256, "steps": 256, "block_length": 256, "threshold": 0.0, "stop_at_eos": False,
                       "scoring": "confidence"},
        right_settings={"gen_length": 256, "steps": 256, "block_length": 32, "threshold": 0.0, "stop_at_eos": False,
                        "scoring": "confidence"},
        figures=("eos_by_pass_2", "story_tokens"),
    ),
    Lesson(
        title="Why diffusion wins on a GPU: what one forward pass costs",
        text="At an answer length of 256 tokens the diffusion twin here makes about 32 forward passes (8 blocks of "
             "32, 4 passes each) and the AR twin 256, "
             "so on the forward-pass clock (press F) diffusion is far ahead. Whether that makes it faster in seconds "
             "depends on what a pass over many positions costs: on a GPU reading the weights takes longer than "
             "the arithmetic (memory-bound), so a pass over 32 positions costs about as much as a pass over one. "
             "On a CPU the arithmetic is the limit (compute-bound): run the pass-cost chart under Sweep charts "
             "to see what each extra position costs on this machine, then press F again to compare in seconds. "
             "The two answers differ in length: the diffusion twin's story ends after about 65 tokens (end-of-text "
             "fills the rest) while the AR twin writes all 256, so 'This race' gives each time to final with its "
             "length.",
        point=part("metrics"), look="'Forward passes' and 'Time to final' in the metrics, then the pass-cost chart",
        try_it="Set the left answer length to 64 and run again: still about 32 passes, each over a quarter of the "
               "positions; the pass-cost chart says what that saves on this machine.",
        try_side="left", try_settings={"gen_length": 64},
        left_settings={"gen_length": 256, "steps": 32, "block_length": 32, "threshold": 0.0, "filter": 0.0,
                       "stop_at_eos": False},
        # the AR twin writes all 256: with the guard against loops it would end its story at about 175 tokens
        right_settings={"gen_length": 256, "min_length": 256}, figures=("passes", "time_to_final"),
    ),
    Lesson(
        title="Mercury's diffusing stream is noise that settles, not masks",
        text="Inception's Mercury API sends no masks: with diffusing on, every chunk is the whole current "
             "draft, noisy text that settles from the left, block by block, until it is final. Converge aligns "
             "each draft with the one before to colour what changed. The left side replays a synthetic stream "
             "made by Converge's test server in Mercury's wire format (a real one needs a key).",
        point=part("heatmap-left"), look="the left heatmap: changes that die out from left to right",
        try_it="Set the replay speed on the left to 0.5 and run again: the stream now takes twice as long (its "
               "time to final doubles), so each draft stays on screen longer; then step through the frames.",
        try_side="left", try_settings={"speed": 0.5},
        left=f"replay:{MERCURY_EXAMPLE_ID}", right="local-diffusion",
        left_settings={}, right_settings={**SHORT, "block_length": 64},
        prompt="Explain what a diffusion language model is, in one paragraph.", figures=("time_to_final",),
    ),
    Lesson(
        title="Write the ending first",
        text="The last words of the left answer, \"The end.\", are pinned before the run: the diffusion twin sees "
             "them from the first step and writes towards them, because it conditions on both sides of every masked "
             "position: its last sentence ends where they begin. The AR twin cannot: it only sees what comes before "
             "the token it writes, so it just "
             "continues the prompt.",
        point=part("panel-left"), look="the end of the left panel, where the pinned words sit from the first frame",
        try_it="Set the left temperature to 1.5 and run again: another story ('How it ends' changes), whose last "
               "sentence still ends just before the pinned words.",
        try_side="left", try_settings={"temperature": 1.5},  # at 0.8 the twin wrote nearly the same story
        left_settings={**SHORT, "block_length": 32},  # the last block of 16 is too short to steer towards the pin
        pins="61: The end.",  # the answer's last 3 tokens
        figures=("ending",),
    ),
    Lesson(
        title="Be the sampler: you choose the order",
        text="Open 'Be the sampler' under the lessons and press Start: each step the twin shows its top candidates "
             "and its confidence for every masked position of the block, and you choose which to commit. Press "
             "'Let the model choose' to see which position its confidence rule takes, and compare its order with "
             "yours; the race here shows confidence order (left) beside random order (right) on the same twin. "
             "Any order is allowed, but not every order reads well: the random order writes another story, which "
             "the twins' referee usually finds less likely (here about four times the perplexity; it varies from "
             "story to story), which is why the sampler's rule matters.",
        point="#sampler", look="the 'Be the sampler' box under the lessons, and the two heatmaps",
        try_it="Set the left block length to 8 and run again: the left heatmap fills nearly left to right (the "
               "distance under the panels falls from about ten to about one).",
        try_side="left", try_settings={"block_length": 8},
        right="local-diffusion",
        left_settings={**SHORT, "gen_length": 32, "steps": 32, "block_length": 32, "scoring": "confidence"},
        right_settings={**SHORT, "gen_length": 32, "steps": 32, "block_length": 32, "scoring": "random"},
        figures=("perplexity", "stray"),
    ),
    Lesson(
        title="Uniform-state diffusion starts from noise, not masks",
        text="The left side is the uniform-state twin, trained like DiffusionGemma: its answer starts as random "
             "tokens (noise, drawn dimmed), never masks. Each pass the model guesses every open position of the "
             "current block, accepts the ones it is surest of (DiffusionGemma's entropy bound) and replaces the rest "
             "with fresh random tokens, so the noise flickers until a position is accepted; the blocks to its right "
             "keep their first noise until their turn. The right side is the masked twin on the same prompt, whose "
             "open positions are blank masks. It writes less likely text than the masked twin (the referee's "
             "perplexity under the panels).",
        point=part("panel-left"), look="the left panel: dimmed random tokens that settle, block by block",
        try_it="Set the left entropy bound to 10 and run again: each pass accepts more positions (about three "
               "tokens a pass, not one) and the text gets worse (the referee's perplexity rises).",
        try_side="left", try_settings={"entropy_bound": 10.0},  # at 4 the page's race read better, not worse
        left="local-uniform", right="local-diffusion",
        left_settings={"gen_length": 64, "steps": 64, "block_length": 16, "entropy_bound": 0.5},
        right_settings=dict(SHORT), figures=("per_pass", "perplexity"),
    ),
    Lesson(
        title="Diffusion revises: repair a draft in place",
        text="Both sides start from one draft: a story the twins never trained on, with two words swapped (trees "
             "chirping in the birds) and a wrong name (Sam for Jack). Each re-noises the 30% it is least sure of: the "
             "uniform twin (left) settles it in place in under a fifth of the AR twin's passes, and the AR twin "
             "(right) keeps the first word and writes the rest again. Both change all three mistakes; only the left "
             "keeps most of the draft (with its own words, not the story's).",
        point=part("metrics"), look="the panels, the figures under them, and 'Kept from the draft' in the metrics",
        try_it="Set the left entropy bound to 10 and run again: each pass accepts more of the noisy positions, so "
               "it finishes in about half the passes, changing the same three mistakes.",
        try_side="left", try_settings={"entropy_bound": 10.0},
        left="local-uniform",  # of the twins it repairs the most planted mistakes (`python -m app bench --only revise`)
        left_settings={"gen_length": 64, "steps": 64, "block_length": 16},  # the draft's length: nothing past it
        right_settings={"gen_length": 64},
        prompt=REVISE_PROMPT, draft=Revision(REVISE_DRAFT, share=0.3, where="unsure"), story=REVISE_STORY,
        figures=("passes", "draft_kept", "mistakes_fixed"),
    ),
    Lesson(
        title="One race is an anecdote: read a board",
        text="Every lesson so far read one race, and one race is an anecdote: this one races both twins over the "
             "first six of the board's held-out story openings, a race each, and fills in the Board section's table "
             "and curve. The diffusion twin writes about 2.7 tokens a pass against the AR twin's one, and the "
             "referee's perplexity (lower reads more like the stories) says on each opening whether that cost "
             "quality. Here it did on some openings and not on others (the line under the table names them, with "
             "each twin's median and worst perplexity), so a single race could have told either story.",
        point="#board",
        look="the Board section: its curve, its table (a row per opening and side) and the line under it",
        try_it="Set the diffusion twin's learned commit filter to 0.5 and run the board again: bolder, about 3.8 "
               "tokens a pass, and its perplexity now rises above the AR twin's on more of the openings, its median "
               "with it.",
        try_side="left", try_settings={"filter": 0.5},
        # the twins at the page's defaults, the diffusion twin's pinned to LESSON_TWIN (tests/test_lesson_claims.py)
        left_settings={}, right_settings={}, board=6,
    ),
]
