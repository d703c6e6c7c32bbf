"""The one bounded reader of what a person sends (specviz.bounded): the probes of issue 57.3 (3000 '[', a 400-digit
number, NaN and Infinity, a text past its size, digits that are not 0-9), each one exception of the caller's type
with a message, and what a well-formed text reads as."""

from __future__ import annotations

import pytest

from specviz import bounded
from specviz.errors import ConfigError, SnapshotError, TraceError


def read(text, **bounds):
    return bounded.read_json(text, error=ConfigError, what="the link's table", **({"max_bytes": 4000} | bounds))


@pytest.mark.parametrize(
    "text, why",
    [
        ("[" * 3000, "it nests deeper than 3 levels"),  # RecursionError from json.loads before
        ('{"a": [[[[1]]]]}', "it nests deeper than 3 levels"),
        ("[" + "1" * 400 + "]", "it holds a whole number of 400 digits, more than the 16 read"),
        ("[-" + "9" * 17 + "]", "it holds a whole number of 17 digits, more than the 16 read"),
        ("[0." + "1" * 40 + "]", "it holds a number of 42 characters, more than the 32 read"),
        ("[1e999]", "it holds 1e999, a number too large to be finite"),
        ("[NaN]", "it holds NaN, not a finite number"),
        ("[-Infinity]", "it holds -Infinity, not a finite number"),
        ('{"a": 1', "it is not JSON (Expecting ',' delimiter: line 1 column 8 (char 7))"),
        (b"\xff\xfe[", "it is not JSON ("),
        ("[" + " " * 4000 + "]", "it is 4,002 bytes long, more than the 4,000 read"),
        ("[" + "é" * 2000 + "]", "it is 4,002 bytes long, more than the 4,000 read"),  # 2,002 characters, 4,002 bytes
    ],
)
def test_what_cannot_be_read_is_one_error_of_the_callers_type_that_says_why(text, why):
    with pytest.raises(ConfigError) as info:
        read(text, max_depth=3)
    assert str(info.value).startswith(f"the link's table cannot be read: {why}"), str(info.value)


def test_the_error_is_the_callers_and_a_well_formed_text_reads_as_json():
    for error in (TraceError, SnapshotError, ValueError):
        with pytest.raises(error):
            bounded.read_json("[[[1]]]", error=error, what="this file", max_bytes=100, max_depth=2)
    text = '{"words": ["a", "[[[[", "٣"], "q": [[0.5, 1e-3, -2, 9007199254740992]]}'  # brackets in text: not nesting
    assert read(text, max_depth=3) == {"words": ["a", "[[[[", "٣"], "q": [[0.5, 0.001, -2, 2**53]]}
    assert read(text.encode(), max_depth=3) == read(text, max_depth=3)
    assert bounded.json_depth(b'["]]]]", {"a": [1]}]', 10) == 3


@pytest.mark.parametrize("text", ["٣", "²", "３", "1_000", "0x10", "1.5", "", "+", "1" * 17, "12a"])
def test_a_whole_number_is_written_in_the_digits_0_to_9(text):
    with pytest.raises(ConfigError, match="K is not a whole number of at most 16 digits 0-9"):
        bounded.whole_number(text, error=ConfigError, what="K")


@pytest.mark.parametrize("text", ["٠.٥", "½", "nan", "inf", "-Infinity", "1e999", "1,5", "0." + "1" * 40, ". 5"])
def test_a_number_is_finite_and_written_in_the_digits_0_to_9(text):
    with pytest.raises(ConfigError, match="τ is not a finite number written with the digits 0-9"):
        bounded.decimal(text, error=ConfigError, what="τ")


def test_numbers_in_the_digits_0_to_9_read_as_they_are_written():
    wholes = {"7": 7, " 42 ": 42, "-3": -3, "+8": 8, "0009": 9, "9" * 16: 10**16 - 1}
    assert {t: bounded.whole_number(t, error=ValueError, what="n") for t in wholes} == wholes
    numbers = {"0.5": 0.5, "-2": -2.0, "1e-3": 0.001, ".25": 0.25, "3.": 3.0, "1E2": 100.0}
    assert {t: bounded.decimal(t, error=ValueError, what="x") for t in numbers} == numbers


def test_only_numbers_a_float_holds_exactly_pass_as_numbers():
    assert bounded.is_whole(2**53) and bounded.is_whole(-(2**53)) and bounded.is_whole(0)
    assert not bounded.is_whole(2**53 + 1) and not bounded.is_whole(10**400) and not bounded.is_whole(True)
    assert not bounded.is_whole(1.0)
    assert bounded.is_number(0.5) and bounded.is_number(2**53) and bounded.is_number(-1e308)
    assert (
        not bounded.is_number(float("nan")) and not bounded.is_number(float("inf")) and not bounded.is_number(10**400)
    )
    assert not bounded.is_number("1") and not bounded.is_number(None) and not bounded.is_number(False)


@pytest.mark.parametrize("value", ["٣", "²", "+", "1" * 17, "1_024"])
def test_a_count_from_the_environment_is_written_in_the_digits_0_to_9(value):
    """specviz.server.config.count ('٣'.isdigit() held before: an operator's SPECVIZ_LLAMA_SLOTS=٣ read as 3)."""
    from specviz.errors import ModelError
    from specviz.server.config import count

    with pytest.raises(ModelError, match="set it to a whole number of runs, 0 or more, or unset it"):
        count({"SPECVIZ_TEST_COUNT": value}, "SPECVIZ_TEST_COUNT", 8, "runs", 0)
    assert count({"SPECVIZ_TEST_COUNT": " 12 "}, "SPECVIZ_TEST_COUNT", 8, "runs", 0) == 12
    assert count({}, "SPECVIZ_TEST_COUNT", 8, "runs", 0) == 8
