"""Example chips fit the sources (issue 51 item 5): with the twins, which write only children's stories, the chips are
story openings; the question chip is offered only while a side races a chat model."""

from __future__ import annotations

from typing import Any

import pytest

from app.lessons.prompts import EXAMPLE_PROMPTS, QUESTIONS
from app.ui.race_ui import CHAT_KINDS, DEFAULT_PAIR, asks
from tests.pages import browser_tab, pick_source


def test_with_the_twins_no_question_is_offered_and_with_a_chat_model_one_is() -> None:
    assert not asks(list(DEFAULT_PAIR)) and not asks(["local-uniform", "hf-ar"])
    assert all(asks(["local-ar", kind]) for kind in CHAT_KINDS)
    assert QUESTIONS and not set(QUESTIONS.values()) & set(EXAMPLE_PROMPTS.values())


@pytest.mark.browser
def test_the_question_chip_shows_only_while_a_side_races_a_chat_model(browser: Any, server_url: str) -> None:
    with browser_tab(browser, server_url) as tab:
        tab.wait_for_selector("#prompt-examples")
        for label in EXAMPLE_PROMPTS:
            assert tab.is_visible(f"#prompt-examples button:has-text(\"{label}\")")
        assert not tab.is_visible("#question-examples")
        assert tab.locator("button:has-text('Explain diffusion')").filter(visible=True).count() == 0
        pick_source(tab, "left", "openai")
        tab.wait_for_selector("#question-examples", state="visible")
        tab.click("#question-examples button:has-text('Explain diffusion')")
        tab.wait_for_function("() => document.querySelector('#prompt textarea').value.startsWith('Explain what')")
        pick_source(tab, "left", "local-diffusion")
        tab.wait_for_selector("#question-examples", state="hidden")
