"""The two question-answering tasks of the paper's Section 6 (docs/theory.md#qa-tasks)."""

from __future__ import annotations

import itertools

import sympy as sp

from rwtoolkit.tasks._finite import FiniteTask

#: The 19-word vocabulary, in the spec's order (token id = position in this tuple).
QA_VOCAB: tuple[str, ...] = (
    "apple",
    "orange",
    "Based",
    "on",
    "the",
    "which",
    "type",
    "of",
    "fruit",
    "list",
    "appears",
    "most",
    "frequently",
    "sentence",
    "I",
    "prefer",
    "an",
    "to",
    "do",
)


def qa_task1() -> FiniteTask:
    """Task 1 (N = 17): which fruit appears most often in a list of five; all 32 lists equally likely."""
    sequences, labels = [], []
    for words in itertools.product(("apple", "orange"), repeat=5):
        sequences.append(
            [
                "Based",
                "on",
                "the",
                "list",
                *words,
                "which",
                "type",
                "of",
                "fruit",
                "appears",
                "most",
                "frequently",
            ]
        )
        labels.append("apple" if words.count("apple") >= 3 else "orange")
    return FiniteTask(sequences, labels, [sp.Rational(1, 32)] * 32, vocab=QA_VOCAB, name="qa1")


def qa_task2() -> FiniteTask:
    """Task 2 (N = 19): "I prefer an A to an B"; the label is A; both orders have probability 1/2."""
    sequences, labels = [], []
    for a, b in (("apple", "orange"), ("orange", "apple")):
        sequences.append(
            [
                "Based",
                "on",
                "the",
                "sentence",
                "I",
                "prefer",
                "an",
                a,
                "to",
                "an",
                b,
                "which",
                "type",
                "of",
                "fruit",
                "do",
                "I",
                "prefer",
            ]
        )
        labels.append(a)
    return FiniteTask(sequences, labels, [sp.Rational(1, 2)] * 2, vocab=QA_VOCAB, name="qa2")
