"""Turning an exercise's registered source text into the learner's function, for the tests."""

import numpy as np


def define(source, name):
    """Run `source` (an exercise's solution or wrong answer) and return the function it defines as `name`."""
    namespace = {"np": np}
    exec(source, namespace)  # noqa: S102 - our own registered source text
    assert name in namespace, f"the source does not define a function called {name!r}"
    return namespace[name]


def solution(name):
    """The working answer of exercise `name`, built from its registered solution."""
    from helpers import checks

    return define(checks.EXERCISES[name].solution, name)


def mistake_cases(messages):
    """The (exercise, mistake code) pairs of a {exercise: {code: [phrases]}} table, for pytest's parametrize."""
    return [(name, code) for name in messages for code in messages[name]]


def reads_as_meant(messages, name, code):
    """Exercise `name`'s registered mistake `code` is named with that code, in a message holding every phrase
    of messages[name][code]; and the table reads every mistake the exercise registers."""
    from helpers import checks

    assert set(messages[name]) == set(checks.EXERCISES[name].mistakes), "a mistake was added or removed: read it"
    result = getattr(checks, name)(define(checks.EXERCISES[name].mistakes[code], name))
    assert result.mistake == code, result.message
    for words in messages[name][code]:
        assert words in result.message, (words, result.message)
