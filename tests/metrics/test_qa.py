"""Multiple-choice parsing and continuation scores (evalsuite.metrics.qa)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalsuite.metrics.qa import first_word_match, parse_choice, qa_words, word_overlap

PROPERTY = settings(max_examples=150, deadline=None)

# --------------------------------------------------------------- parse_choice


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("B", 1),
        ("(b)", 1),
        ("Answer: 2", 1),
        ("The answer is C.", 2),
        ("  d  ", 3),
        ("**D**", 3),
        ("4.", 3),
        ("answer is b", 1),
        ("The correct option is (a) because the text says so.", 0),
        ("Choice: D", 3),
        ("I'm fairly sure it is C, given the second paragraph.", 2),
        ("B) Paris is the capital.", 1),
        ("Reasoning first.\n3) the third option", 2),
        ("The best fit is [a].", 0),
    ],
)
def test_parse_choice_finds_the_option(answer, expected):
    assert parse_choice(answer, 4) == expected


@pytest.mark.parametrize(
    "answer",
    [
        "",
        "I do not know.",
        "A or B",  # two options
        "Option A is wrong; the answer is B",  # two cued options
        "The answer is a bit unclear",  # the article "a" is not a label
        "E",  # out of range for 4 options
        "Answer: 7",
        "There were 2 men and 3 women.",  # bare numbers in prose are not labels
    ],
)
def test_parse_choice_none_when_absent_or_ambiguous(answer):
    assert parse_choice(answer, 4) is None


def test_parse_choice_range_follows_n_options():
    assert parse_choice("E", 5) == 4
    assert parse_choice("3", 2) is None
    assert parse_choice("Answer: 26", 26) == 25


@PROPERTY
@given(st.integers(1, 26), st.data())
def test_every_label_form_parses_to_its_option(n_options, data):
    index = data.draw(st.integers(0, n_options - 1))
    letter = chr(ord("A") + index)
    template = data.draw(
        st.sampled_from(["{}", "({})", "{}.", "Answer: {}", "The answer is {}.", "answer is ({})"])
    )
    label = data.draw(st.sampled_from([letter, letter.lower(), str(index + 1)]))
    assert parse_choice(template.format(label), n_options) == index


@PROPERTY
@given(st.text(max_size=40), st.integers(1, 30))
def test_parse_choice_in_range_or_none(answer, n_options):
    choice = parse_choice(answer, n_options)
    assert choice is None or 0 <= choice < n_options


@pytest.mark.parametrize(
    ("args", "error", "name"),
    [
        ((None, 4), TypeError, "answer_text"),
        ((b"B", 4), TypeError, "answer_text"),
        (("B", 0), ValueError, "n_options"),
        (("B", "4"), TypeError, "n_options"),
        (("B", True), TypeError, "n_options"),
    ],
)
def test_parse_choice_rejects_bad_input(args, error, name):
    with pytest.raises(error, match=f"^{name} "):
        parse_choice(*args)


# --------------------------------------------------------------- continuation scores

continuations = st.lists(
    st.sampled_from(["The", "the", "cat", "cat,", "sat", "on", "mat.", "«mat»", "don't"]),
    max_size=10,
).map(" ".join)


def test_qa_words_lowercase_and_drop_unicode_punctuation():
    assert qa_words("Don't, Bob! «Quoted» — well-known…") == ["dont", "bob", "quoted", "wellknown"]


@pytest.mark.parametrize(
    ("pred", "target", "expected"),
    [
        ("the cat sat", "The cat sat.", 1.0),
        ("the cat", "the cat sat on the mat", 2 / 6),
        ("the the the the", "the cat the", 2 / 3),  # repeats count at most as often as in target
        ("", "the cat", 0.0),
        ("", "", 1.0),
        ("words", "...", 0.0),  # target without words
    ],
)
def test_word_overlap_examples(pred, target, expected):
    assert word_overlap(pred, target) == expected


@pytest.mark.parametrize(
    ("pred", "target", "expected"),
    [
        ("The cat", "the dog", True),
        ("\"Cat\" sat", "cat, said he", True),
        ("dog", "cat", False),
        ("", "cat", False),
        ("...", "...", False),
    ],
)
def test_first_word_match_examples(pred, target, expected):
    assert first_word_match(pred, target) is expected


@PROPERTY
@given(continuations, continuations, st.randoms())
def test_word_overlap_range_and_order_free(pred, target, rng):
    overlap = word_overlap(pred, target)
    assert 0.0 <= overlap <= 1.0
    words = pred.split()
    rng.shuffle(words)
    assert word_overlap(" ".join(words), target) == overlap
    assert word_overlap(pred.upper(), target) == overlap


@PROPERTY
@given(continuations)
def test_identity(text):
    assert word_overlap(text, text) == 1.0
    assert first_word_match(text, text) == bool(qa_words(text))


def test_first_word_match_sees_order_where_overlap_does_not():
    assert word_overlap("sat cat", "cat sat") == 1.0
    assert not first_word_match("sat cat", "cat sat")


@pytest.mark.parametrize("function", [word_overlap, first_word_match])
@pytest.mark.parametrize("bad", [None, b"text", ["text"]])
def test_continuation_scores_reject_bad_input(function, bad):
    with pytest.raises(TypeError, match=r"^pred "):
        function(bad, "text")
    with pytest.raises(TypeError, match=r"^target "):
        function("text", bad)
