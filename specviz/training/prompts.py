"""Prompts for distilling the embedded draft (train) and for evaluating it (held out).

Both lists are built from templates × subjects. The held-out list uses subjects, tasks and
templates that never occur in the training list, so evaluation measures generalisation, not recall.
Each prompt is (text, chat): chat prompts are wrapped in the target's chat template.

Longer than most modules, for a reason: most of it is the prompts themselves, as data.
"""

from __future__ import annotations

import itertools
import random

Prompt = tuple[str, bool]

_TRAIN_SUBJECTS = [
    "a lighthouse keeper",
    "a lost robot",
    "a dragon who cannot fly",
    "two rival bakers",
    "a girl who talks to birds",
    "an old clockmaker",
    "a cat on a train",
    "a detective in Paris",
    "a farmer during a drought",
    "a space station cook",
    "a boy and his kite",
    "a haunted library",
    "a pirate who fears water",
    "a village festival",
    "a tiny mouse knight",
    "a musician who lost her voice",
    "a snowstorm in the mountains",
    "a friendly ghost",
    "a desert caravan",
    "a scientist's first experiment",
    "a stray dog in the city",
    "a king who could not sleep",
    "a magic umbrella",
    "a school science fair",
    "a fisherman and a whale",
    "an astronaut alone on Mars",
    "a wizard's apprentice",
    "a forgotten toy",
    "a hot air balloon race",
    "a garden that grows at night",
]
_TRAIN_CONCEPTS = [
    "photosynthesis",
    "gravity",
    "inflation",
    "the water cycle",
    "machine learning",
    "democracy",
    "compound interest",
    "vaccines",
    "black holes",
    "the internet",
    "supply and demand",
    "evolution",
    "electric circuits",
    "climate change",
    "recursion",
    "the immune system",
    "plate tectonics",
    "probability",
    "the French Revolution",
    "blockchains",
    "sleep",
    "nutrition",
    "renewable energy",
    "the stock market",
    "encryption",
    "volcanoes",
    "memory in the brain",
    "the speed of light",
    "bacteria",
    "sorting algorithms",
]
_TRAIN_ACTIVITIES = [
    "learning a new language",
    "running a first marathon",
    "saving money",
    "cooking for a family",
    "studying for exams",
    "writing a resume",
    "starting a garden",
    "public speaking",
    "working from home",
    "making friends in a new city",
    "taking better photos",
    "reducing stress",
    "keeping a plant alive",
    "planning a road trip",
    "learning to code",
]
_TRAIN_CODE = [
    "reverses a string",
    "checks whether a number is prime",
    "counts the words in a sentence",
    "returns the largest element of a list",
    "merges two sorted lists",
    "computes the factorial of n",
    "removes duplicates from a list",
    "converts Celsius to Fahrenheit",
    "reads a CSV file and sums a column",
    "finds the nth Fibonacci number",
    "checks whether a string is a palindrome",
    "flattens a nested list",
    "counts vowels in a string",
    "sorts a dictionary by its values",
    "computes the average of a list",
    "validates an email address",
    "returns the GCD of two numbers",
    "transposes a matrix",
    "capitalizes every word in a string",
    "finds the second smallest number in a list",
]
_TRAIN_FACTS = [
    "The Eiffel Tower",
    "The Amazon rainforest",
    "Mount Everest",
    "The Great Wall of China",
    "Albert Einstein",
    "The Pacific Ocean",
    "Ancient Rome",
    "The human heart",
    "The Moon",
    "Honey bees",
    "The Sahara desert",
    "William Shakespeare",
    "The printing press",
    "Penguins",
    "The Nile river",
    "Jupiter",
    "The Roman alphabet",
    "Marie Curie",
    "Coffee",
    "The Olympic Games",
    "Tokyo",
    "The Renaissance",
    "Dolphins",
    "Electricity",
    "The Industrial Revolution",
]
_TRAIN_PEOPLE = ["my manager", "a landlord", "a teacher", "a neighbour", "a customer", "an old friend"]
_TRAIN_REASONS = ["a late delivery", "a schedule change", "a thank-you", "a broken heater", "a team dinner"]

_EVAL_SUBJECTS = ["a retired astronaut who opens a bakery", "an octopus that learns to paint", "a city with no cars"]
_EVAL_CONCEPTS = ["how a refrigerator keeps food cold", "why the sky is blue", "what a hash table is"]
_EVAL_CODE = ["checks whether two strings are anagrams", "returns the running sum of a list of numbers"]
_EVAL_FACTS = ["The Atlantic Ocean", "Leonardo da Vinci", "The city of Kyoto"]


def _lower_the(name: str) -> str:
    return name.lower() if name.startswith("The ") else name


def _pick(items: list, n: int, rng: random.Random) -> list:
    return rng.sample(items, min(n, len(items)))


def train_prompts(seed: int = 0) -> list[Prompt]:
    """About 600 varied prompts (stories, chat instructions, code, facts); half chat-wrapped."""
    rng = random.Random(seed)
    out: list[Prompt] = []
    for s in _TRAIN_SUBJECTS:
        out += [
            (f"Write a short story about {s}.", True),
            (f"Tell me a bedtime story about {s}, in under 200 words.", True),
            (f"Once upon a time there was {s}.", False),
            (f"The story of {s} begins on a rainy morning.", False),
        ]
    for c in _TRAIN_CONCEPTS:
        out += [
            (f"Explain {c} in simple terms.", True),
            (f"What are the three most important things to know about {c}?", True),
            (f"Write a paragraph for a textbook chapter on {c}.", False),
            (f"Here is a short explanation of {c}:", False),
        ]
    for a, b in itertools.combinations(_pick(_TRAIN_CONCEPTS, 12, rng), 2):
        if rng.random() < 0.5:
            out.append((f"What is the difference between {a} and {b}?", True))
    for a in _TRAIN_ACTIVITIES:
        out += [(f"Give me five tips for {a}.", True), (f"How do I get started with {a}?", True)]
        out.append((f"A beginner's guide to {a}. Step 1:", False))
    for task in _TRAIN_CODE:
        out += [
            (f"Write a Python function that {task}.", True),
            (f"Write a JavaScript function that {task}, with a comment.", True),
            (f"# Python function that {task}\ndef ", False),
        ]
    for fact in _TRAIN_FACTS:
        out += [
            (f"Tell me about {fact[4:] if fact.startswith('The ') else fact}.", True),
            (f"{fact} is", False),
            (f"Five facts about {fact.lower() if fact.startswith('The ') else fact}:\n1.", False),
        ]
    for person, reason in itertools.product(_TRAIN_PEOPLE, _TRAIN_REASONS):
        out.append((f"Write a short email to {person} about {reason}.", True))
    rng.shuffle(out)
    return out


def train_prompts_round2(seed: int = 1) -> list[Prompt]:
    """About 560 more training prompts: new templates over the same subjects (the first round
    overfitted at ~100k tokens, so more varied text was the cheapest help)."""
    rng = random.Random(seed)
    out: list[Prompt] = []
    for s in _TRAIN_SUBJECTS:
        out += [
            (f"Write a poem about {s}.", True),
            (f"Describe {s} in three sentences.", True),
            (f"Write the opening paragraph of a novel about {s}.", True),
            (f"Chapter 1\n\nNobody expected {s} to", False),
            (f"Write a funny dialogue between {s} and a talking teapot.", True),
        ]
    for c in _TRAIN_CONCEPTS:
        out += [
            (f"Explain {c} to a ten-year-old.", True),
            (f"Write three quiz questions about {c}, with answers.", True),
            (f"Summarize {c} in one paragraph.", True),
            (f"Q: What is {c}?\nA:", False),
            (f"Common misconceptions about {c} include", False),
        ]
    for a in _TRAIN_ACTIVITIES:
        out += [
            (f"What mistakes do people make when {a}?", True),
            (f"Make a one-week plan for {a}.", True),
            (f"My friend is {a}. How can I support them?", True),
            (f"Why {a} is harder than it looks:", False),
        ]
    for task in _TRAIN_CODE:
        out += [
            (f"Write a unit test for a Python function that {task}.", True),
            (f"Explain step by step how to write a function that {task}.", True),
            (f"Write a C function that {task}.", True),
            (f"// JavaScript: a function that {task}\nfunction ", False),
            (f'def solve(data):\n    """{task.capitalize()}."""\n', False),
        ]
    for fact in _TRAIN_FACTS:
        name = fact[4:] if fact.startswith("The ") else fact
        out += [
            (f"Write a quiz question about {name}.", True),
            (f"What is the history of {name}?", True),
            (f"Why is {name} famous?", True),
            (f"A short encyclopedia entry.\n\n{fact}:", False),
        ]
    for person, reason in itertools.product(_TRAIN_PEOPLE, _TRAIN_REASONS):
        out.append((f"Write a polite text message to {person} about {reason}.", True))
    for a, b in itertools.combinations(_pick(_TRAIN_FACTS, 10, rng), 2):
        if rng.random() < 0.5:
            out.append((f"Compare {_lower_the(a)} and {_lower_the(b)}.", True))
    rng.shuffle(out)
    return out


def eval_prompts() -> list[Prompt]:
    """Held-out prompts: 16 of them, four per kind (stories, chat instructions, code, facts), with
    subjects and templates that no training prompt uses (tests/test_draft.py checks the templates)."""
    return [
        ("Tell a tale about a retired beekeeper who opens a bakery.", True),
        ("Narrate a day in the life of an octopus that learns to paint.", True),
        ("In a small harbour town lived an old glassblower who", False),
        ("The ferry captain had not missed a crossing in forty years, until", False),
        ("Can you explain how a refrigerator keeps food cold?", True),
        ("Can you explain why the sky is blue?", True),
        ("List four ways to stay focused while studying.", True),
        ("Suggest a weekend itinerary for a first visit to Lisbon.", True),
        ("Implement a Python function that checks whether two strings are anagrams.", True),
        ("Implement a Python function that returns the running sum of a list of numbers.", True),
        ("# Python: read a text file and print its longest line\ndef ", False),
        ("// Rust: reverse the words of a sentence\nfn ", False),
        ("The Atlantic Ocean is", False),
        ("Leonardo da Vinci was", False),
        ("Give an overview of the history of Kyoto.", True),
        ("Mount Kilimanjaro, the highest mountain in Africa,", False),
    ]


EVAL_SUBJECTS = (
    "beekeeper",
    "octopus",
    "glassblower",
    "ferry",
    "refrigerator",
    "sky is blue",
    "focused",
    "Lisbon",
    "anagram",
    "running sum",
    "longest line",
    "reverse the words",
    "Atlantic",
    "Leonardo",
    "Kyoto",
    "Kilimanjaro",
)

_ADJECTIVES = [
    "brave",
    "shy",
    "curious",
    "forgetful",
    "tiny",
    "ancient",
    "clumsy",
    "cheerful",
    "lonely",
    "clever",
    "sleepy",
    "stubborn",
    "gentle",
    "noisy",
    "mysterious",
    "generous",
    "grumpy",
    "young",
]
_CHARACTERS = [
    "fox",
    "robot",
    "baker",
    "sailor",
    "dragon",
    "librarian",
    "owl",
    "gardener",
    "detective",
    "turtle",
    "painter",
    "wizard",
    "farmer",
    "penguin",
    "inventor",
    "knight",
    "cat",
    "mail carrier",
    "bear",
    "violinist",
    "squirrel",
    "chef",
    "pilot",
    "elephant",
]
_SETTINGS = [
    "in a snowy forest",
    "on a floating island",
    "in a busy market",
    "at the bottom of the sea",
    "in a haunted castle",
    "on a distant planet",
    "in a tiny apartment",
    "during a thunderstorm",
    "in the desert",
    "on a train at night",
    "in a school for magic",
    "by a quiet river",
]
_STORY_TEMPLATES = [
    ("Write a short story about a {a} {c} {s}.", True),
    ("Write a story for children about a {a} {c} {s}.", True),
    ("Once upon a time, a {a} {c} lived {s}.", False),
    ("There was once a {a} {c} {s}. Every day,", False),
    ("Write a diary entry by a {a} {c} {s}.", True),
]


def story_prompts(n: int, seed: int = 2) -> list[Prompt]:
    """`n` story prompts: templates over adjective × character × setting (no held-out subject)."""
    rng = random.Random(seed)
    combos = list(itertools.product(_ADJECTIVES, _CHARACTERS, _SETTINGS, range(len(_STORY_TEMPLATES))))
    out = []
    for a, c, s, k in rng.sample(combos, min(n, len(combos))):
        text, chat = _STORY_TEMPLATES[k]
        out.append((text.format(a=a, c=c, s=s), chat))
    return out


def corpus_prompts(n: int, seed: int = 3, root: str | None = None) -> list[Prompt]:
    """Up to `n` prompts of prose, code and instructions built from the docstrings of the Python
    standard library on this machine (it ships offline): a docstring's opening to continue, a
    function head with its docstring to complete, and chat requests about what a function does.
    Tests, non-ASCII text and docstrings naming a held-out subject are left out."""
    import ast
    import sysconfig
    from pathlib import Path

    base = Path(root or sysconfig.get_paths()["stdlib"])
    found: list[Prompt] = []
    for path in sorted(base.rglob("*.py")):
        if any(part in ("test", "tests", "idlelib", "site-packages", "lib2to3") for part in path.parts):
            continue
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, ValueError, OSError):
            continue
        for node in ast.walk(tree):
            if not isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.Module)):
                continue
            doc = ast.get_docstring(node)
            if not doc or not doc.isascii() or len(doc) < 60 or any(s.lower() in doc.lower() for s in EVAL_SUBJECTS):
                continue
            first = " ".join(doc.split("\n\n")[0].split())
            words = first.split()
            if len(words) < 6:
                continue
            if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
                args = ", ".join(a.arg for a in node.args.args)
                found.append((f'def {node.name}({args}):\n    """{first}"""\n', False))
                found.append((f"Write a Python function `{node.name}` that does this: {first}", True))
            elif isinstance(node, ast.ClassDef):
                found.append((f"Explain in simple words what this means: {first}", True))
            else:
                found.append((" ".join(words[: max(8, len(words) // 2)]), False))
    rng = random.Random(seed)
    unique = sorted(set(found))
    return rng.sample(unique, min(n, len(unique)))


def all_train_prompts(seed: int = 0, stories: int = 3000, corpus: int = 8000) -> list[Prompt]:
    """Every training prompt: the two templated rounds, generated stories and the corpus prompts."""
    return train_prompts(seed) + train_prompts_round2(seed + 1) + story_prompts(stories) + corpus_prompts(corpus)
