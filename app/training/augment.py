"""More stories from the same 1.7 MB: consistent entity substitution (a training-data augmentation).

The twins may never see more text than the corpus, and a model that sees the same ~2,000 stories hundreds of
times learns them by heart ("Lily" gets the AR teacher's favourite story word for word). Swapping each story's
names, animals, colours, objects and places for others of the same kind, the same way everywhere in that story,
keeps the text grammatical and the plot intact while changing its surface: the model has to learn how stories go
rather than which words follow "Lily". Every word here begins with a consonant sound, so "a" stays right, and
takes a plain "s" plural, so plurals follow their singular.
"""

from __future__ import annotations

import random
import re

GIRLS = ("Lily", "Anna", "Sara", "Mia", "Lucy", "Sue", "Sarah", "Molly", "Jane", "Daisy", "Lila", "Sally", "Jill",
         "Mary", "Jenny", "Jenna", "Claire", "Lola", "Kate", "Rose", "Zoe", "Nina", "Maya", "Ruby", "Grace", "Tina",
         "Rosa", "Polly", "Hannah", "Wendy", "Nora", "Bella", "Lena", "Dora", "Kim", "Pam")
BOYS = ("Timmy", "Ben", "Tom", "Tim", "Jack", "Max", "Sam", "John", "Bob", "Tommy", "Joe", "Billy", "Benny",
        "Jimmy", "Jake", "Sammy", "Mark", "James", "Freddy", "Frank", "Jim", "Peter", "Leo", "Johnny", "Pete",
        "Charlie", "Finn", "Noah", "Hugo", "Ned", "Ravi", "Dan", "Luke", "Paul", "Nick", "Ray", "Zack", "Kevin")
ANIMALS = ("dog", "cat", "bird", "frog", "bear", "duck", "pig", "cow", "horse", "lion", "kitten", "turtle",
           "monkey", "rabbit", "squirrel", "goat", "hen", "bee", "tiger", "zebra", "penguin", "parrot", "wolf",
           "puppy", "bunny")
COLOURS = ("red", "blue", "green", "yellow", "pink", "purple", "brown", "white", "black", "gold", "grey", "silver")
OBJECTS = ("ball", "kite", "doll", "truck", "boat", "drum", "hat", "book", "toy", "box", "bag", "cup", "balloon",
           "shell", "rock", "stick", "flower", "teddy", "car", "train", "robot", "puzzle", "crayon", "spoon")
PLACES = ("park", "garden", "forest", "beach", "farm", "school", "store", "zoo", "lake", "river", "yard", "field",
          "pond", "hill", "library", "market", "meadow", "jungle")
KINDS = (GIRLS, BOYS, ANIMALS, COLOURS, OBJECTS, PLACES)
# irregular plurals of the words above; the rest take "s"
PLURALS = {"puppy": "puppies", "bunny": "bunnies", "wolf": "wolves", "box": "boxes", "teddy": "teddies",
           "library": "libraries"}

_SINGULAR = {PLURALS.get(w, w + "s"): w for kind in KINDS[2:] for w in kind}
_ALL = {w.lower() for kind in KINDS for w in kind} | set(_SINGULAR)
_SPLIT = re.compile(r"([A-Za-z]+)")  # words at odd indices, everything between them at even ones
_KIND = {w.lower(): i for i, kind in enumerate(KINDS) for w in kind}


def _plural(word: str) -> str:
    return PLURALS.get(word, word + "s")


def _cased(like: str, word: str) -> str:
    """`word` with the capitalisation of `like` (sentence starts and names keep their capital)."""
    return word[:1].upper() + word[1:] if like[:1].isupper() else word


def _parse(story: str) -> tuple[list[str], list[int]]:
    """The story split into words and what lies between them, and the indices of the words that may be swapped."""
    parts = _SPLIT.split(story)
    return parts, [i for i in range(1, len(parts), 2) if parts[i].lower() in _ALL]


def _render(parsed: tuple[list[str], list[int]], rng: random.Random) -> str:
    """One substituted version of a parsed story: each entity word maps to one other word of its kind for the
    whole story, and two different words never map to the same one."""
    parts, slots = parsed
    parts = list(parts)
    mapping: dict[str, str] = {}
    used: set[str] = set()
    for i in slots:
        found = parts[i]
        low = found.lower()
        plural = low in _SINGULAR and low not in _KIND
        base = _SINGULAR[low] if plural else low
        kind = _KIND[base]
        if kind < 2 and not found[:1].isupper():
            continue  # "lily" the flower, "max" the word: names are capitalised
        if base not in mapping:
            free = [w for w in KINDS[kind] if w.lower() not in used]
            pick = rng.choice(free) if free else base
            mapping[base] = pick.lower()
            used.add(pick.lower())
        new = mapping[base].capitalize() if kind < 2 else mapping[base]
        parts[i] = _cased(found, _plural(new) if plural else new)
    return "".join(parts)


def substitute(story: str, rng: random.Random) -> str:
    """The story with every known entity swapped for another of its kind, consistently."""
    return _render(_parse(story), rng)


def augmented(stories: list[str], copies: int, seed: int) -> list[str]:
    """`copies` substituted versions of every story (the originals not included), seeded."""
    rng = random.Random(seed)
    parsed = [_parse(s) for s in stories]
    return [_render(p, rng) for _ in range(copies) for p in parsed]
