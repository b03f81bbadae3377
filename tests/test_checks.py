"""Every registered exercise check, fed a correct, a wrong, an untouched and a crashing answer.

The exercises are read from the registry at collection time, so an exercise added to a
helpers/checks/nbNN_*.py module later is covered without touching this file.
"""

import contextlib
import importlib
import pkgutil
import re
from pathlib import Path

import numpy as np
import pytest
from _answers import define
from _feedback import code_in, mismatch_messages, solution_code_in

import helpers
from helpers import checks
from helpers.checks import _core
from helpers.checks._cases import Judge

NAMES = sorted(checks.EXERCISES)
MISTAKES = [(name, code) for name in NAMES for code in checks.EXERCISES[name].mistakes]
VERDICT_MARKS = ("✓", "✗", "·")
CHECK_MODULES = sorted(Path(checks.__file__).parent.glob("*.py"))
# the codes the engine and expect_* give on their own; an exercise's mistakes need names of their own
GENERIC = {
    "wrong-values",
    "wrong-shape",
    "nan",
    "not-an-array",
    "not-boolean",
    "not-a-function",
    "returned-none",
    "crash",
    "not-finished",
    "forbidden",
    "check-failed",
}


def run_check(name, answer, capsys):
    """Run checks.<name>(answer); return (result, printed text). Fails the test if the check raises."""
    result = getattr(checks, name)(answer)
    printed = capsys.readouterr().out
    verdicts = [line for line in printed.splitlines() if line.startswith(VERDICT_MARKS)]
    assert len(verdicts) == 1, f"expected exactly one verdict line, got:\n{printed}"
    assert name in verdicts[0]
    return result, printed


def raises_not_implemented(*args, **kwargs):
    # your code here
    raise NotImplementedError


def returns_none(*args, **kwargs):
    pass  # the learner wrote nothing yet (or forgot `return`)


def divides_by_zero(*args, **kwargs):
    return 1 / 0


def bad_shapes(*args, **kwargs):
    return np.ones((2, 3)) @ np.ones((4, 5))  # ValueError from numpy, the most common crash


def bad_index(*args, **kwargs):
    return [][0]  # IndexError


def bad_name(*args, **kwargs):
    return undefined_name  # noqa: F821 - NameError, a typo in the learner's code


def test_there_are_exercises():
    assert NAMES, "helpers.checks.EXERCISES is empty"


@pytest.fixture(autouse=True)
def no_hints_seen():
    """Each test starts as a learner who has asked for no hint yet."""
    _core.HINTS_SHOWN.clear()
    yield
    _core.HINTS_SHOWN.clear()


@pytest.mark.parametrize("name", NAMES)
def test_registration(name):
    ex = checks.EXERCISES[name]
    assert ex.name == name
    assert callable(getattr(checks, name, None)), f"checks.{name} is not exposed"
    assert ex.hint and ex.hint2 and ex.hint != ex.hint2 and ex.notebook
    assert f"def {name}(" in ex.solution
    assert len(ex.mistakes) >= 3, f"{name}: register the three most likely mistakes, each with its own message"
    for code, source in ex.mistakes.items():
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", code), f"{name}: mistake code {code!r} is not kebab-case"
        assert code not in GENERIC, f"{name}: {code!r} is a generic code; a named mistake needs its own"
        assert f"def {name}(" in source and source != ex.solution
    assert ex.wrong == next(iter(ex.mistakes.values()))


@pytest.mark.parametrize("name", NAMES)
def test_solution_is_correct(name, capsys):
    result, printed = run_check(name, define(checks.EXERCISES[name].solution, name), capsys)
    assert result.status == checks.CORRECT, printed
    assert bool(result) and printed.startswith("✓")


@pytest.mark.parametrize("name, code", MISTAKES, ids=[f"{n}-{c}" for n, c in MISTAKES])
def test_each_mistake_gets_its_own_message(name, code, capsys):
    ex = checks.EXERCISES[name]
    result, printed = run_check(name, define(ex.mistakes[code], name), capsys)
    assert result.status == checks.INCORRECT, printed
    assert not result and printed.startswith("✗")
    assert result.mistake == code, f"{name}: the {code!r} answer was named {result.mistake!r}:\n{printed}"
    # the message names the mistake; it neither prints the hint nor gives the solution's code
    assert ex.hint not in printed and f"checks.hint({name!r}) gives a hint." in printed
    line = solution_code_in(printed, ex.solution)
    assert line is None, f"{name} {code}: the message gives away the solution's line {line!r}:\n{printed}"


WAYS = [(name, i) for name in NAMES for i in range(len(checks.EXERCISES[name].ways))]


@pytest.mark.parametrize("name, i", WAYS, ids=[f"{n}-{checks.EXERCISES[n].ways[i].code}-{i}" for n, i in WAYS])
def test_every_way_of_making_a_mistake_is_named_in_words_and_shapes(name, i, capsys):
    """Each registered way (a code may have several) gets its code, and its message, past the call it names, has
    no code: the words of messages kept as data are read here, as the check prints them."""
    ex = checks.EXERCISES[name]
    way = ex.ways[i]
    result, printed = run_check(name, define(way.source, name), capsys)
    assert result.mistake == way.code, f"{name}: way {i} of {way.code!r} was named {result.mistake!r}:\n{printed}"
    message = result.message.splitlines()[0].removeprefix(f"✗ {name}: ")
    said = message
    for what in sorted((case.what for case in ex.check.cases()), key=len, reverse=True):
        said = said.replace(what, "")  # the call the message names is the only code it may hold
    assert code_in(said) is None, f"{name} {way.code}: the message has code, {code_in(said)}: {said}"


def _function_names():
    """Every public helpers function with an underscore in its name, and every exercise's function."""
    found = set(checks.EXERCISES)
    for info in pkgutil.walk_packages(helpers.__path__, "helpers."):
        module = importlib.import_module(info.name)
        found |= {n for n, obj in vars(module).items() if callable(obj) and "_" in n and not n.startswith("_")}
    return found


FUNCTION_NAMES = _function_names()


def functions_named_in(text, own):
    """The numpy functions (np.x) and the helpers or exercise functions that a hint names, its own aside."""
    numpy_names = set(re.findall(r"\bnp\.[A-Za-z_][\w.]*[A-Za-z_]", text))
    return numpy_names | {w for w in re.findall(r"\b[a-z]+(?:_[a-z0-9]+)+\b", text) if w in FUNCTION_NAMES - {own}}


def test_a_hint_that_names_several_functions_is_found():
    recipe = "Take the running sums with np.cumsum, find u with np.searchsorted, or np.argmax at temperature 0."
    assert functions_named_in(recipe, "x") == {"np.cumsum", "np.searchsorted", "np.argmax"}
    assert functions_named_in("Split with split_heads, as in exercise 1.", "x") == {"split_heads"}


@pytest.mark.parametrize("name", NAMES)
def test_a_hint_names_at_most_one_function(name):
    """A hint gives the idea (docs/adding-an-exercise.md): naming a function to look up is fine, naming the
    functions of every step in turn is the solution in words."""
    ex = checks.EXERCISES[name]
    for which, text in (("hint", ex.hint), ("hint2", ex.hint2)):
        named = functions_named_in(text, name)
        assert len(named) <= 1, f"{name}'s {which} names {sorted(named)}: a hint names at most one function"


@pytest.mark.parametrize("name", NAMES)
def test_hints_describe_without_code(name):
    ex = checks.EXERCISES[name]
    for which, text in (("hint", ex.hint), ("hint2", ex.hint2)):
        assert code_in(text) is None, f"{name}'s {which} has code, {code_in(text)}: {text}"
        line = solution_code_in(text, ex.solution)
        assert line is None, f"{name}'s {which} gives away the solution's line {line!r}"


@pytest.mark.parametrize("path", CHECK_MODULES, ids=[p.name for p in CHECK_MODULES])
def test_messages_are_words_and_shapes_with_a_code(path):
    """Every Mismatch written in the checks: its text has no code (placeholders aside) and it names its mistake.

    An exercise module writes each message as a literal or f-string, so it can be read here; the engine raises
    messages kept as data too (the registered mistakes', the families' tables), which the test above reads.
    """
    for line, text, code in mismatch_messages(path):
        if path.name.startswith("nb"):
            assert text is not None, (
                f"{path.name}:{line}: write the message as a literal or f-string, so it can be read"
            )
        assert text is None or code_in(text) is None, (
            f"{path.name}:{line}: the message has code, {code_in(text)}: {text}"
        )
        assert code is not None, f"{path.name}:{line}: give the Mismatch a mistake code"


def test_every_code_an_exercise_module_raises_is_registered_with_an_answer_that_gets_it():
    """A targeted message that no registered mistake reaches is a message no test has read."""
    registered = {code for ex in checks.EXERCISES.values() for code in ex.mistakes}
    for path in CHECK_MODULES:
        if not path.name.startswith("nb"):
            continue
        for line, _, code in mismatch_messages(path):
            name = getattr(code, "value", None)
            if isinstance(name, str) and name not in GENERIC:
                assert name in registered, f"{path.name}:{line}: mistake {name!r} has no registered wrong answer"


def stub_with_docstring_and_ellipsis(*args, **kwargs):
    """The learner's docstring stays: still untouched."""
    ...
    raise NotImplementedError("write this")


def started_but_kept_the_raise(*args, **kwargs):
    scores = np.ones(3)  # the learner began  # noqa: F841
    raise NotImplementedError


def calls_an_unsolved_stub(*args, **kwargs):
    return raises_not_implemented(*args)  # e.g. 06's cross-attention calling the learner's own split_heads


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(
    "stub",
    [raises_not_implemented, stub_with_docstring_and_ellipsis, None, Ellipsis],
    ids=["raises NotImplementedError", "docstring and ellipsis", "None", "Ellipsis"],
)
def test_untouched_stub_is_not_attempted(name, stub, capsys):
    result, printed = run_check(name, stub, capsys)
    assert result.status == checks.NOT_ATTEMPTED, printed
    assert not result and printed.startswith("·")


def test_a_stub_without_source_is_judged_by_its_bytecode(capsys):
    name = NAMES[0]
    stub = define(f"def {name}(*args):\n    # your code here\n    raise NotImplementedError\n", name)
    assert run_check(name, stub, capsys)[0].status == checks.NOT_ATTEMPTED
    started = define(f"def {name}(*args):\n    x = np.ones(2)\n    raise NotImplementedError\n", name)
    assert run_check(name, started, capsys)[0].status == checks.INCORRECT


@pytest.mark.parametrize("name", NAMES)
def test_returning_none_is_an_attempt_that_forgot_return(name, capsys):
    result, printed = run_check(name, returns_none, capsys)
    assert result.status == checks.INCORRECT, printed
    assert "returned None: did you forget `return`?" in printed


@pytest.mark.parametrize("name", NAMES)
def test_not_implemented_from_elsewhere_is_an_attempt(name, capsys):
    result, printed = run_check(name, started_but_kept_the_raise, capsys)
    assert result.status == checks.INCORRECT, printed
    assert "delete the `raise NotImplementedError` line" in printed
    result, printed = run_check(name, calls_an_unsolved_stub, capsys)
    assert result.status == checks.INCORRECT, printed
    assert "calls `raises_not_implemented`, which still raises NotImplementedError: finish that one first" in printed


@pytest.mark.parametrize("name", NAMES)
def test_crashing_answer_is_incorrect_and_named(name, capsys):
    result, printed = run_check(name, divides_by_zero, capsys)
    assert result.status == checks.INCORRECT, printed
    assert "ZeroDivisionError" in printed and "ZeroDivisionError" in result.message
    assert "Traceback" not in printed  # shown briefly, not as a traceback


@pytest.mark.parametrize(
    "crash, error",
    [(bad_shapes, "ValueError"), (bad_index, "IndexError"), (bad_name, "NameError")],
    ids=["ValueError", "IndexError", "NameError"],
)
@pytest.mark.parametrize("name", NAMES)
def test_other_crashes_are_incorrect_and_named(name, crash, error, capsys):
    result, printed = run_check(name, crash, capsys)
    assert result.status == checks.INCORRECT, printed
    assert error in printed


@pytest.mark.parametrize("name", NAMES)
def test_answer_that_is_not_a_function_is_incorrect(name, capsys):
    result, printed = run_check(name, 42, capsys)
    assert result.status == checks.INCORRECT, printed


@pytest.mark.parametrize("name", NAMES)
def test_hint_and_solution_print(name, capsys):
    ex = checks.EXERCISES[name]
    checks.hint(name)
    printed = capsys.readouterr().out
    assert ex.hint in printed and ex.hint2 not in printed and "again gives a more concrete one" in printed
    result = getattr(checks, name)(define(ex.wrong, name))
    assert f"checks.hint({name!r}) again gives a more concrete hint." in result.message
    checks.hint(name)
    printed = capsys.readouterr().out
    assert ex.hint2 in printed and f"checks.solution({name!r}) shows a solution" in printed
    result = getattr(checks, name)(define(ex.wrong, name))
    assert f"checks.solution({name!r}) shows a solution." in result.message
    checks.hint(name)  # asked a third time: the second hint again
    assert ex.hint2 in capsys.readouterr().out
    checks.hint(name, 1)
    assert ex.hint in capsys.readouterr().out
    checks.solution(name)
    printed = capsys.readouterr().out
    assert printed.strip() == checks.EXERCISES[name].solution
    # the printed solution is a working answer
    assert getattr(checks, name)(define(printed, name)).status == checks.CORRECT


def test_unknown_name_does_not_raise(capsys):
    checks.hint("no_such_exercise")
    checks.solution("no_such_exercise")
    printed = capsys.readouterr().out
    assert printed.count("No exercise called 'no_such_exercise'") == 2
    assert NAMES[0] in printed  # it lists the real ones


def test_a_name_cannot_be_registered_twice():
    name = NAMES[0]
    before = dict(checks.EXERCISES)

    def duplicate():
        yield checks.Case("x")

    duplicate.__name__ = name
    solution, mistakes = f"def {name}(x):\n    return x\n", "m: `return x` → `return 0`\n    {what}: zero"
    with pytest.raises(ValueError, match=f"{name!r} is registered twice"):
        checks.exercise(notebook="99_test", hint="h", hint2="h2", solution=solution, mistakes=mistakes)(duplicate)
    assert checks.EXERCISES == before


def test_an_exercise_written_another_way_is_refused_when_registered():
    """A check must be a function of no arguments yielding Cases, with its mistakes as a table (a string)."""
    solution, table = "def odd_one(x):\n    return x\n", "m: `return x` → `return 0`\n    {what}: zero"

    def odd_one(answer):  # a check of the answer itself
        pass

    with pytest.raises(TypeError, match="odd_one takes no arguments"):
        checks.exercise(hint="h", hint2="h2", solution=solution, mistakes=table)(odd_one)

    def odd_one():
        yield checks.Case("x")

    with pytest.raises(TypeError, match="mistakes should be a table of mistakes, a string; got dict"):
        checks.exercise(hint="h", hint2="h2", solution=solution, mistakes={"m": solution})(odd_one)
    assert "odd_one" not in checks.EXERCISES


def test_hint_with_a_bad_level_or_name_does_not_raise(capsys):
    checks.hint(NAMES[0], 3)
    assert "which = 1 or 2" in capsys.readouterr().out
    assert not _core.HINTS_SHOWN


@pytest.fixture
def scratch_exercise():
    """Register a throwaway exercise whose one case is given by the test; removed afterwards."""
    made = []

    def register(case, name="scratch_exercise"):
        def cases():
            yield case

        cases.__name__ = name
        checks.exercise(
            notebook="99_test",
            hint="an idea",
            hint2="a nearer idea",
            solution=f"def {name}(x):\n    return x\n",
            mistakes="m: `return x` → `return 0`\n    {what}: zero",
        )(cases)
        made.append(name)
        return checks.EXERCISES[name]

    yield register
    for name in made:
        checks.EXERCISES.pop(name)
        _core.LATEST.pop(name, None)


def test_a_fault_in_the_check_is_owned_by_the_check_not_blamed_on_the_learner(scratch_exercise, capsys):
    ex = scratch_exercise(checks.Case("x = 3", run=lambda f: {}[f(3)]))  # the check's code fails on what f returned
    result = ex.run(lambda x: x + 1)
    assert result.status == checks.INCORRECT and result.mistake == "check-failed"
    assert "could not read your answer (KeyError: 4)" in result.message
    assert "tell your instructor" in result.message and "your code raised" not in result.message


def test_a_crash_in_the_answer_is_the_learners_even_when_the_check_calls_it(scratch_exercise, capsys):
    ex = scratch_exercise(checks.Case("x = 3", (3,)))
    result = ex.run(lambda x: {}[x])
    assert result.mistake == "crash" and "your code raised KeyError: 3" in result.message


ODD_RESULTS = [
    0.0,
    "x",
    True,
    (1.0, 2.0),
    [[1.0], [1.0, 2.0]],
    np.zeros(0),
    np.zeros((2, 3, 4)),
    np.full(5, np.nan),
    np.ones((4, 4), dtype=complex),
    {"a": 1},
    (np.zeros(3), np.zeros(3), np.zeros(3)),
]


@pytest.mark.parametrize("name", NAMES)
def test_an_answer_of_the_wrong_kind_is_named_never_a_fault_of_the_check(name, capsys):
    for odd in ODD_RESULTS:
        result, printed = run_check(name, lambda *args, odd=odd, **kwargs: odd, capsys)
        assert result.status == checks.INCORRECT, f"{name} accepted {odd!r}"
        assert result.mistake != "check-failed", f"{name} could not read {odd!r}:\n{printed}"


def test_compare_never_raises_and_says_what_differs(capsys):
    assert checks.compare(np.array([0.2, 0.8]), [0.2, 0.8])
    assert capsys.readouterr().out.startswith("✓ your result agrees")
    result = checks.compare(np.array([0.2, 0.7]), [0.2, 0.8], "attention_row(...)")
    assert not result and result.mistake == "wrong-values"
    assert "attention_row(...) differs from the expected values at index (1,): got 0.7, expected 0.8" in result.message
    assert not checks.compare(np.ones(3), np.ones((2, 3)))
    assert "has shape (3,), expected (2, 3)" in capsys.readouterr().out
    assert not checks.compare(None, [1.0]) and not checks.compare([1.0], "abc")


def test_compare_calls_a_function_and_reports_its_crash_instead_of_raising(capsys):
    assert checks.compare(lambda: np.array([0.2, 0.8]), [0.2, 0.8])
    capsys.readouterr()

    def attention_row(X):
        return X[0] + np.ones(3)  # (4,) + (3,): the learner's own crash

    result = checks.compare(lambda: attention_row(np.ones((2, 4))), np.ones(4), "attention_row(X)")
    assert not result and result.mistake == "crash"
    assert "your code raised ValueError" in result.message and "return X[0] + np.ones(3)" in result.message
    result = checks.compare(lambda: raises_not_implemented(), np.ones(4), "attention_row(X)")
    assert not result and result.mistake == "not-finished" and "NotImplementedError" in result.message


# --- the building blocks exercises are written with ---------------------------------


def test_expect_close_names_the_entry_that_breaks_the_tolerance_most_with_digits_enough_to_differ():
    expected = np.array([-4.537123, 0.0, 100.0])
    got = expected + np.array([3e-4, 0.0, 1e-3])  # the largest difference is at 2, but within rtol there
    with pytest.raises(checks.Mismatch, match=r"at index \(0,\): got -4.5368, expected -4.5371"):
        checks.expect_close(got, expected, "x")


def test_expect_close_accepts_a_right_answer_in_float32_or_float16():
    rng = np.random.default_rng(0)
    A, B = rng.normal(size=(3, 50)), rng.normal(size=(50, 8))
    expected = A @ B - (A @ B)[0, 0]  # (3, 8), one entry exactly 0
    in_float32 = A.astype(np.float32) @ B.astype(np.float32)
    in_float32 = in_float32 - in_float32[0, 0] + np.float32(3e-7)  # float32's rounding, about 1e-7 of the largest
    assert not np.allclose(in_float32, expected, rtol=1e-5, atol=1e-8)  # float64's tolerance would reject it
    checks.expect_close(in_float32, expected, "x")
    checks.expect_close(expected.astype(np.float16), expected, "x")
    with pytest.raises(checks.Mismatch, match="differs"):  # a wrong float32 answer is still wrong
        checks.expect_close((expected + 0.01).astype(np.float32), expected, "x")


def test_as_array_names_a_tuple_of_arrays():
    with pytest.raises(checks.Mismatch, match=r"x returned 2 things \(a tuple\); return only the one array"):
        checks.as_array((np.zeros(3), np.ones((3, 3))), "x")
    assert checks.as_array((1.0, 2.0), "x").shape == (2,)  # a tuple of numbers is an array


def test_expect_close_messages():
    checks.expect_close([1.0, 2.0], [1.0, 2.0 + 1e-9], "x")  # within tolerance: no error
    with pytest.raises(checks.Mismatch, match=r"x has shape \(3,\), expected \(2,\)"):
        checks.expect_close([4.0, 5.0, 6.0], [1.0, 2.0], "x")
    with pytest.raises(checks.Mismatch, match=r"x differs .* at index \(1,\): got 5, expected 2"):
        checks.expect_close([1.0, 5.0], [1.0, 2.0], "x")
    with pytest.raises(checks.Mismatch, match="x contains NaN"):
        checks.expect_close([1.0, np.nan], [1.0, 2.0], "x")
    with pytest.raises(checks.Mismatch, match="x should be an array"):
        checks.expect_close([[1.0], [1.0, 2.0]], [1.0, 2.0], "x")


def test_expect_equal_messages():
    checks.expect_equal(np.array([True, False]), [True, False], "mask")
    with pytest.raises(checks.Mismatch, match="mask should be a boolean array"):
        checks.expect_equal(np.array([1, 0]), np.array([True, False]), "mask")
    with pytest.raises(checks.Mismatch, match=r"mask differs at index \(1,\)"):
        checks.expect_equal(np.array([True, True]), np.array([True, False]), "mask")


def test_call_passes_copies():
    def mutating(a):
        a[:] = 0
        return a

    original = np.ones(3)
    checks.call(mutating, original)
    assert np.array_equal(original, np.ones(3))  # the learner cannot spoil the check's inputs
    ids = [3, 1, 4]
    checks.call(lambda x: x.append(1) or x, ids)  # a list edited in place (e.g. token ids)
    assert ids == [3, 1, 4]


def test_a_crash_inside_a_helper_names_the_helper_and_quotes_the_learners_line(capsys):
    import helpers

    def attention_row(X, attention, head, i):
        weights = helpers.softmax(X[i] @ X.T)
        return helpers.scaled_dot_product_attention(X, X, weights)[0]  # the weights passed as the values

    printed = run_check("attention_row", attention_row, capsys)[1]
    assert "raised inside the workshop's `helpers.attention.scaled_dot_product_attention`" in printed
    assert "called from your line: return helpers.scaled_dot_product_attention(X, X, weights)[0]" in printed
    assert "raise " not in printed.split("your line:")[1]  # never the helper's own line


def test_a_crash_inside_numpy_names_the_learners_line(capsys):
    def cosine_similarity(a, b):
        return a @ b / np.linalg.norm(a, axis=3)  # an axis a vector does not have: the error comes from inside

    printed = run_check("cosine_similarity", cosine_similarity, capsys)[1]
    assert "AxisError" in printed and "in your line: return a @ b / np.linalg.norm(a, axis=3)" in printed
    assert "add.reduce" not in printed and "numpy" not in printed.split("in your line")[1]


def test_numpy_matmul_message_is_explained_in_shapes(capsys):
    def qkv_scores(X, W_q, W_k, W_v):
        Q, K, V = X @ W_q, X @ W_k, X @ W_v
        return Q, K, V, Q @ K  # no transpose: (4, 3) @ (4, 3)

    printed = run_check("qkv_scores", qkv_scores, capsys)[1]
    assert "last axis of A must equal the second-to-last of B, here 3 and 4" in printed
    assert "check which factor comes first, and whether a transpose is missing or one too many" in printed


def test_np_dot_message_is_explained_like_matmul(capsys):
    def qkv_scores(X, W_q, W_k, W_v):
        Q, K, V = X @ W_q, X @ W_k, X @ W_v
        return Q, K, V, np.dot(Q, K)  # np.dot words it differently: "shapes (4,3) and (4,3) not aligned"

    printed = run_check("qkv_scores", qkv_scores, capsys)[1]
    assert "not aligned" in printed and "second-to-last of B, here 3 and 4" in printed
    assert "whether a transpose is missing or one too many" in printed


def test_numpy_broadcast_message_is_explained_in_shapes(capsys):
    def masked_softmax(scores, mask):
        keep = mask & np.ones(scores.shape[-1] + 1, dtype=bool)  # one key too many: shapes do not line up
        return np.where(keep, scores, 0.0)

    printed = run_check("masked_softmax", masked_softmax, capsys)[1]
    assert "could not be broadcast together" in printed
    assert "compared from the right, each pair of axes must be equal or 1" in printed
    assert "Insert an axis of length 1" in printed


def test_an_entry_by_entry_product_of_two_matrices_is_told_apart_from_a_missing_axis(capsys):
    def similarity_matrix(X, cosine=False):
        return X * X.T  # (5, 7) * (7, 5): a matrix product was meant

    printed = run_check("similarity_matrix", similarity_matrix, capsys)[1]
    assert "A single star multiplies entry by entry; a sum of products over a shared axis is a matrix" in printed
    assert "keepdims" not in printed

    def similarity_matrix(X, cosine=False):  # noqa: F811 - the learner's next attempt
        n = np.linalg.norm(X, axis=0)
        return X @ X.T / np.outer(n, n)  # (5, 5) / (7, 7): neither a dropped axis nor a product

    printed = run_check("similarity_matrix", similarity_matrix, capsys)[1]
    assert "shapes (5, 5) and (7, 7) cannot be combined" in printed
    assert "keepdims" not in printed and "single star" not in printed


def test_a_caret_and_a_float_shape_are_explained(capsys):
    def score_variance(d_k, sigma_q, sigma_k):
        return d_k * sigma_q ^ 2 * sigma_k ^ 2

    printed = run_check("score_variance", score_variance, capsys)[1]
    assert "the caret is bitwise XOR" in printed and "a power is written with two stars" in printed

    def split_heads_batched(X, n_heads):
        *batch, T, d_model = X.shape
        return np.swapaxes(X.reshape(*batch, T, n_heads, d_model / n_heads), -3, -2)

    printed = run_check("split_heads_batched", split_heads_batched, capsys)[1]
    assert "needs whole numbers" in printed and "integer division, written with two slashes" in printed


def test_crash_explanations_have_no_code():
    from helpers.checks._diagnose import _explain_numpy

    messages = [
        "matmul: Input operand 1 has a mismatch in its core dimension 0, with gufunc signature (n?,k),(k,m?)->(n?,m?) "
        "(size 4 is different from 3)",
        "shapes (5,7) and (5,7) not aligned: 7 (dim 1) != 5 (dim 0)",
        "operands could not be broadcast together with shapes (5,7) (7,5) ",
        "operands could not be broadcast together with shapes (4,6) (4,) ",
        "operands could not be broadcast together with shapes (5,5) (7,7) ",
        "unsupported operand type(s) for ^: 'float' and 'float'",
        "'float' object cannot be interpreted as an integer",
    ]
    for message in messages:
        explained = _explain_numpy(message, "return X * X.T")
        assert explained and code_in(explained) is None, (message, explained)


def test_an_import_inside_the_function_does_not_get_round_forbid(capsys):
    def row_softmax(S):
        from helpers.attention import softmax as the_softmax

        return the_softmax(S)

    def row_softmax_through_the_package(S):
        import helpers

        return helpers.softmax(S)

    for answer in (row_softmax, row_softmax_through_the_package):
        result, printed = run_check("row_softmax", answer, capsys)
        assert result.mistake == "forbidden", printed


def test_progress_shows_the_latest_verdict_of_each_exercise(capsys):
    in_05 = [name for name, ex in checks.EXERCISES.items() if ex.notebook == "05_masking"]
    for name in in_05:  # earlier tests left their own verdicts: start from "not attempted"
        getattr(checks, name)(raises_not_implemented)
    checks.masked_softmax(define(checks.EXERCISES["masked_softmax"].solution, "masked_softmax"))
    checks.build_causal_mask(raises_not_implemented)
    capsys.readouterr()
    checks.progress()  # the notebook of the exercise checked last
    printed = capsys.readouterr().out
    assert printed.splitlines()[0] == f"05_masking: 1 of {len(in_05)} exercises correct"
    assert "  · build_causal_mask" in printed and "  ✓ masked_softmax" in printed
    checks.progress("01_embeddings")
    assert "01_embeddings: " in capsys.readouterr().out
    checks.progress("99_nothing")
    assert "No exercises for '99_nothing'" in capsys.readouterr().out


# --- families: mistakes named by a property of the answer, not one by one --------------------------

SOLUTIONS = {name: ex.solution for name, ex in checks.EXERCISES.items()}
UNREGISTERED = [  # wrong answers no exercise registers, each named by its family: (exercise, change, code, words)
    (
        "next_word_loss",
        ("return -picked.mean()", "return -picked.mean() / np.log(2)"),
        "scaled-by-a-constant",
        "divided by ln 2 = 0.6931: a logarithm in base 2 (bits)",
    ),
    (
        "next_word_loss",
        ("return -picked.mean()", "return -picked.sum() / ids.shape[1]"),
        "scaled-by-a-constant",
        "a division by T where B·(T − 1) belongs",
    ),
    (
        "next_word_loss",
        ("logits[:, :-1]", "logits[:, :-2]"),
        "another-shift",
        "scored against the word 2 places after it",
    ),
    (
        "kv_cache_step",
        ("return K, V, weights @ V", "return K, V, weights @ K"),
        "wrong-array-weighted",
        "mixes the rows of the keys K with the attention weights",
    ),
    (
        "cached_attention_step",
        ("return weights @ V, K, V", "return weights @ K, K, V"),
        "wrong-array-weighted",
        "mixes the rows of the keys K",
    ),
    (
        "cached_attention_step",
        ("np.sqrt(len(q))", "np.sqrt(window)"),
        "scores-scaled-wrongly",
        "divided by √window = √3",
    ),
    (
        "multi_head_cross_attention",
        ("/ np.sqrt(d_head)", "* np.sqrt(d_head)"),
        "scores-scaled-wrongly",
        "multiplied by √d_head",
    ),
    (
        "nearest_neighbours",
        ("np.argsort(-cosines)[:k]", "np.argsort(-cosines)[1:k + 1]"),
        "shifted-along-an-axis",
        "the right entry of place i + 1",
    ),
    ("similarity_matrix", ("return X @ X.T", "return 2 * X @ X.T"), "scaled-by-a-constant", "times 2"),
    ("attention_row", ("e / e.sum()", "e / e.sum() / 2"), "not-a-distribution", "sums to 0.5, not 1"),
]


@pytest.mark.parametrize(
    "name, change, code, words", UNREGISTERED, ids=[f"{n}-{c}-{i}" for i, (n, _, c, _) in enumerate(UNREGISTERED)]
)
def test_a_wrong_answer_no_exercise_registers_is_named_by_its_family(name, change, code, words, capsys):
    if change[0] == "logits[:, :-1]":  # shifted by two words: the targets two places on too
        change = [change, ("ids[:, 1:]", "ids[:, 2:]")]
    else:
        change = [change]
    result, printed = run_check(name, define(checks.edited(SOLUTIONS[name], *change), name), capsys)
    assert result.mistake == code and words in printed, printed


def test_the_families_name_arrays_by_their_property():
    from helpers.checks import _families as families

    right = np.array([[3.0, 1.0, 4.0, 1.5], [5.0, 9.0, 2.0, 6.0], [5.5, 3.5, 8.0, 9.7]])
    with pytest.raises(checks.Mismatch, match=r"axes 0 and 1 exchanged \(shape \(4, 3\), expected \(3, 4\)\)"):
        families.axes_exchanged(right.T, right, "x")
    with pytest.raises(checks.Mismatch, match="moved 1 place along axis 1 .*place i − 1"):
        families.shifted_along_an_axis(np.roll(right, 1, axis=1), right, "x")
    with pytest.raises(
        checks.Mismatch, match="3 places along axis 1 where 4 are expected: the right ones, without the first one"
    ):
        families.shifted_along_an_axis(right[:, 1:], right, "x")
    with pytest.raises(checks.Mismatch, match="every entry the right one times 1.5, the same factor"):
        families.scaled_by_a_constant(1.5 * right, right, "x")
    with pytest.raises(checks.Mismatch, match="the right value, 2, times T = 6: a sum over those 6"):
        families.scaled_by_a_constant(np.array(12.0), np.array(2.0), "x", {"T": 6})
    families.scaled_by_a_constant(np.array(12.5), np.array(2.0), "x", {"T": 6})  # a number by no named factor
    with pytest.raises(checks.Mismatch, match="row 1 sums to 2, not 1"):
        families.not_a_distribution(np.array([[0.5, 0.5], [1.0, 1.0]]), np.ones((2, 2)) / 2, "x", ": weights")
    rows = np.array([True, False])
    families.not_a_distribution(np.array([[0.5, 0.5], [0.0, 0.0]]), np.ones((2, 2)) / 2, "x", ": weights", where=rows)
    for answer in (right + 1, right[::-1]):  # neither scaled, shifted nor transposed: no family
        for family in (families.axes_exchanged, families.shifted_along_an_axis, families.scaled_by_a_constant):
            family(answer, right, "x")


# --- the engine: a check as cases and a table of mistakes; the hooks a verdict is handed to ------------------


def test_every_exercise_is_in_the_notebook_its_module_names():
    for name, ex in checks.EXERCISES.items():
        assert isinstance(ex.check, Judge), f"{name}: every check is cases and a table of mistakes, judged by Judge"
        assert ex.check._cases.__module__ == f"helpers.checks.nb{ex.notebook}", name


@contextlib.contextmanager
def scratch(cases, **exercise):
    """Register an exercise written as `cases` (in notebook 99_scratch) for the block; removed after it."""
    cases.__module__ = "tests.nb99_scratch"
    checks.exercise(hint="h", hint2="h2", **exercise)(cases)
    try:
        yield checks.EXERCISES[cases.__name__]
    finally:
        checks.EXERCISES.pop(cases.__name__)
        _core.LATEST.pop(cases.__name__, None)


def test_an_exercise_written_as_cases_names_each_mistake_from_its_table(capsys):
    def mix():  # the cases its answer is called on
        rng = np.random.default_rng(0)
        yield checks.Case(
            "mix(weights, V) for weights (3, 3)", (rng.random((3, 3)), rng.normal(size=(3, 4))), facts={"k": 3}
        )

    mistakes = r"""
        transposed: `weights @ V` → `weights.T @ V`
            {what}: the columns of the weights mixed the values
        doubled: `return ` → `return 2 * `
            {what}: twice the values, over {k} keys
        halved: `weights @ V` → `weights @ V / 2`
            {what}: half
        broadcast: `weights @ V` → `weights * V.T`
            {what}: entry by entry
    """
    with scratch(mix, solution="def mix(weights, V):\n    return weights @ V\n", mistakes=mistakes, combine=2) as ex:
        assert ex.notebook == "99_scratch" and list(ex.mistakes) == ["transposed", "doubled", "halved", "broadcast"]
        assert checks.mix(lambda w, V: w @ V)
        result = checks.mix(lambda w, V: 2 * (w @ V))
        assert result.mistake == "doubled" and "twice the values, over 3 keys" in result.message
        result = checks.mix(lambda w, V: w * V.T)  # a crash, the same as the registered one's: named by it
        assert result.mistake == "broadcast" and "entry by entry" in result.message
        result = checks.mix(lambda w, V: 2 * (w.T @ V))  # two registered mistakes at once: both named
        assert (
            result.mistake == "transposed" and "mixed the values; and twice the values, over 3 keys" in result.message
        )
        result = checks.mix(lambda w, V: 3 * (w @ V))  # none of them: the families, then the generic comparison
        assert result.mistake == "scaled-by-a-constant"
    capsys.readouterr()


def test_a_way_without_a_message_says_its_codes_message_and_a_family_may_name_a_registered_mistake(capsys):
    def scale():
        yield checks.Case("scale(x) for x of shape (4,)", (np.arange(1.0, 5.0),))

    mistakes = r"""
        too-large: `3 * x` → `4 * x`
            {what}: too large
        too-large: `3 * x` → `5 * x`
        too-small: `3 * x` → `2 * x`
            {what}: too small
    """
    smaller = lambda got, expected, case: "too-small" if np.all(np.abs(got) < np.abs(expected)) else None  # noqa: E731
    with scratch(scale, solution="def scale(x):\n    return 3 * x\n", mistakes=mistakes, families=smaller) as ex:
        assert [way.says for way in ex.ways] == ["{what}: too large", "{what}: too large", "{what}: too small"]
        result = checks.scale(lambda x: 5 * x)  # the second way: the first's message
        assert result.mistake == "too-large" and "scale(x) for x of shape (4,): too large" in result.message
        result = checks.scale(lambda x: x)  # no way gives it; the family names the registered too-small
        assert result.mistake == "too-small" and "scale(x) for x of shape (4,): too small" in result.message
        result = checks.scale(lambda x: 3 * x + 1)  # neither: the generic comparison
        assert result.mistake == "wrong-values"
    capsys.readouterr()


def test_a_case_of_several_calls_reads_and_names_each_call_on_its_own(capsys):
    inputs = (np.ones(2), np.arange(3.0))
    whats = ("double(x) for x of shape (2,)", "double(x) for x of shape (3,)")

    def double():
        run = lambda f: tuple(f(x) for x in inputs)  # noqa: E731
        yield checks.Case(whats[0], expected=tuple(2 * x for x in inputs), run=run, parts=whats)

    with scratch(double, solution="def double(x):\n    return 2 * x\n", mistakes="halved: `2 * x` → `x / 2`\n  h"):
        assert checks.double(lambda x: x + x)
        result = checks.double(lambda x: 2 * x if len(x) == 2 else x[:2])  # only the second call is wrong
        assert result.mistake == "wrong-shape" and "double(x) for x of shape (3,) has shape (2,)" in result.message
        result = checks.double(lambda x: "two" if len(x) == 3 else 2 * x)
        assert result.mistake == "not-an-array" and result.message.startswith("✗ double: double(x) for x of shape (3,)")
    capsys.readouterr()


def test_every_verdict_is_handed_to_the_hooks_and_a_hook_never_stops_a_check(capsys):
    seen = []

    def hook(exercise, verdict, mistake, message):
        seen.append((exercise, verdict, mistake, message.splitlines()[0]))

    def broken(*args):
        raise RuntimeError("the board is down")

    name = NAMES[0]
    try:
        assert checks.on_verdict(hook) is hook and checks.on_verdict(hook) is hook  # registered once
        checks.on_verdict(broken)
        result = getattr(checks, name)(define(checks.EXERCISES[name].wrong, name))
        assert seen == [(name, checks.INCORRECT, result.mistake, result.message.splitlines()[0])]
        checks.reporting(False)
        getattr(checks, name)(define(checks.EXERCISES[name].solution, name))
        assert len(seen) == 1  # switched off: nothing handed over
        checks.reporting(True)
        getattr(checks, name)(define(checks.EXERCISES[name].solution, name))
        assert seen[-1][:3] == (name, checks.CORRECT, None)
        with pytest.raises(TypeError, match="True or False"):
            checks.reporting("no")
    finally:
        _core.HOOKS.remove(hook)
        _core.HOOKS.remove(broken)
        _core.REPORTING["on"] = True
    capsys.readouterr()
    checks.reporting()
    assert "Reporting to the class board: no board here" in capsys.readouterr().out


def test_a_hub_names_the_board_reporter_and_the_checks_install_it():
    import os
    import subprocess
    import sys

    code = "from helpers import checks; from helpers.checks import _core; print([h.__module__ for h in _core.HOOKS])"
    env = {**os.environ, "WORKSHOP_CHECK_HOOKS": "helpers.board_report, no.such.module"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['helpers.board_report']"  # a hook module that cannot load is left out, quietly
    env.pop("WORKSHOP_CHECK_HOOKS")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"  # off a hub: the engine knows of no board
