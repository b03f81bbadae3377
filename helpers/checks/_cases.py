"""A check written as data: the cases it calls the answer on, and its mistakes, each written once.

An exercise's check yields `Case`s: the arguments of one call and the numbers its messages may use. Each
registered mistake is a change of the solution and one message template. `Judge` runs the answer on every
case; where it is wrong, a mistake whose source gives the same result (or the same crash) names it; else the
exercise's families, then the generic comparison, say what differs.
"""

import copy
import itertools
import re
import textwrap
import warnings
from dataclasses import dataclass, field

import numpy as np

from helpers.checks._expect import Mismatch, as_array, expect_close, expect_equal, returned_tuple, same


def call(fn, *args, **kwargs):
    """Call the learner's function on copies of the (array, list, dict) arguments; returning None is a Mismatch.

    An exception from the learner's code is marked as theirs (the verdict quotes their line); one
    raised by the check's own code after it is a fault of the check, and says so.
    """
    if not callable(fn):
        raise Mismatch(f"expected a function, got {type(fn).__name__}", "not-a-function")
    copies = [copy.deepcopy(a) if isinstance(a, (np.ndarray, list, dict)) else a for a in args]
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            result = fn(*copies, **kwargs)
    except Exception as exc:
        exc._raised_by_the_answer = True
        raise
    if result is None:
        raise Mismatch("your function returned None: did you forget `return`?", "returned-none")
    return result


def raised_by_the_answer(exc):
    """True when `exc` came out of the learner's own code, as `call` ran it (not out of the check's code)."""
    return getattr(exc, "_raised_by_the_answer", False)


def edited(source, *changes):
    """`source` (an exercise's solution) with each (old, new) text replaced: one plausible wrong answer.

    Each `old` must occur in the source, so a solution edited later cannot silently drop a mistake.
    """
    for old, new in changes:
        if old not in source:
            raise ValueError(f"{old!r} is not in the source it should change")
        source = source.replace(old, new)
    return source


def define(source, name):
    """The function `source` defines as `name`, run with numpy only, as in a learner's fresh cell."""
    namespace = {"np": np}
    exec(source, namespace)  # noqa: S102 - the exercise's own registered source
    return namespace[name]


@dataclass
class Case:
    """One call of the learner's function: its arguments, how messages name it, the numbers they may use.

    facts: what a message template may say ({T}, {d_k}); one that is a function is given the learner's result.
    expected: the right result (None: the solution's); run(fn) -> result, for a case that calls the function
    several times (with functions that `call` already wraps); parts: the name of each call, when run returns one
    result per call, each read and compared on its own.
    """

    what: str
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    facts: dict = field(default_factory=dict)
    expected: object = None
    run: object = None
    parts: tuple = ()

    def outcome(self, fn):
        """What `fn` gives on this case: its result, or the exception it raised (kept, to be compared)."""
        try:
            return self.run(lambda *a, **k: call(fn, *a, **k)) if self.run else call(fn, *self.args, **self.kwargs)
        except Exception as exc:
            return exc


@dataclass
class Mistake:
    """One registered way of getting an exercise wrong: its code, its source, the message template that names it.

    says None: the exercise's families name it (its message needs more than one case's numbers).
    """

    code: str
    source: str
    says: str = None
    edits: list = field(default_factory=list)  # the changes of the solution it is made of

    def message(self, case, got):
        return self.says.format_map(_Facts({**case.facts, "what": case.what, "got": _readable(got)}, got))


class _Facts(dict):
    """A case's facts for a message: one that is a function of the learner's result is worked out when used."""

    def __init__(self, facts, got):
        super().__init__(facts)
        self.got = got

    def __getitem__(self, key):
        value = super().__getitem__(key)
        return value(self.got) if callable(value) else value


def _readable(got):
    """A result as a message shows it: one number as a float, else as it is."""
    try:
        arr = np.asarray(got)
        return float(arr) if arr.size == 1 and arr.dtype.kind in "biuf" else got
    except Exception:  # a ragged tuple
        return got


_HEAD = re.compile(r"([a-z0-9]+(?:-[a-z0-9]+)*):(| `.*)")
_EDIT = re.compile(r"`([^`]*)` → `([^`]*)`")


def mistakes_of(table, solution):
    """[Mistake] from an exercise's table of mistakes, one way per entry, in the order written.

    An entry is a line `code: `old` → `new`, `old` → `new`` (each change of the solution, \\n for a new line;
    more changes may follow on lines of their own), or `code:` and a whole function below it, indented; then its
    message, indented, on the lines below, joined with spaces. An entry with no message says what the entry above
    it with the same code says; when none does, the families name it.
    """
    ways, whole = [], None  # (code, changes, a whole function's lines, the message's lines); whole: its indent
    for line in textwrap.dedent(table).strip().splitlines():
        indent, line = len(line) - len(line.lstrip()), line.strip()
        if line.count("`") % 2:
            raise ValueError(f'a change is not closed in the table of mistakes (write it as r"""..."""): {line}')
        changes = [(old.replace("\\n", "\n"), new.replace("\\n", "\n")) for old, new in _EDIT.findall(line)]
        if whole is not None and line and indent > whole:  # the whole function goes on
            ways[-1][2].append(" " * (indent - whole) + line)
        elif indent == 0 and _HEAD.fullmatch(line):  # a new entry
            whole = ways.append((_HEAD.fullmatch(line)[1], changes, [], []))
        elif line.startswith("def ") and not any(ways[-1][1:]):  # a whole function instead of changes
            whole = ways[-1][2].append(line) or indent
        elif line.startswith("`") and not ways[-1][3]:  # more changes
            ways[-1][1].extend(changes)
        elif line:
            whole = ways[-1][3].append(line)
    mistakes = []
    for code, edits, source, says in ways:
        says = " ".join(says) or next((m.says for m in mistakes if m.code == code and m.says), None)
        mistakes.append(Mistake(code, "\n".join(source) if source else edited(solution, *edits), says, edits))
    return mistakes


def agrees(a, b):
    """Two outcomes are the same: the same exception and message, or the same results (tuples part by part).

    NaN and 0 count as the same: a row that sees no key is NaN or zeros, whichever way it was computed.
    """
    if isinstance(a, Exception) or isinstance(b, Exception):
        return type(a) is type(b) and str(a) == str(b)
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(agrees(x, y) for x, y in zip(a, b, strict=True))
    try:
        a, b = np.asarray(a), np.asarray(b)
    except ValueError:  # a ragged list
        return False
    return a.dtype.kind in "biuf" and b.dtype.kind in "biuf" and same(np.nan_to_num(a * 1.0), np.nan_to_num(b * 1.0))


class Judge:
    """How an exercise written as cases judges an answer; the solution's and each mistake's outcomes are kept.

    returns: the names of a returned tuple's parts; exact: compared exactly (masks, indices), else to `close`
    (rtol, atol); read(got, what), compare(got, expected, case) and families(got, expected, case) replace or add
    to how a result is read, compared and named (a family raises Mismatch, or returns a registered mistake's code);
    combine: how many registered mistakes made at once are named (for an exercise whose mistakes are independent
    parts, each message saying what its part does).
    """

    def __init__(self, name, cases, solution, ways, returns=None, exact=False, close=None, read=None, compare=None,
                 families=None, combine=1):  # fmt: skip
        self.name, self._cases, self.solution, self.ways, self.returns = name, cases, solution, ways, returns
        self.exact, self.close, self.read_hook, self.compare_hook = exact, close or {}, read, compare
        self.families, self.combine, self._kept = families, combine, {}

    def cases(self):
        if "cases" not in self._kept:
            self._kept["cases"] = list(self._cases())
        return self._kept["cases"]

    def outcomes(self, source):
        """What `source` (the solution's or a mistake's) gives on every case, kept after the first time."""
        if source not in self._kept:
            self._kept[source] = [case.outcome(define(source, self.name)) for case in self.cases()]
        return self._kept[source]

    def expected(self, i):
        case = self.cases()[i]
        return case.expected if case.expected is not None else self.outcomes(self.solution)[i]

    def read(self, got, case):
        if case.parts:
            return [self.read(one, Case(what)) for one, what in zip(got, case.parts, strict=True)]
        if self.read_hook:
            return self.read_hook(got, case.what)
        return returned_tuple(got, self.returns, case.what) if self.returns else as_array(got, case.what)

    def compare(self, got, i):
        """Raise Mismatch unless the read result `got` is right for case i."""
        case, expected = self.cases()[i], self.expected(i)
        if self.compare_hook:
            return self.compare_hook(got, expected, case)
        names = case.parts or [f"{case.what}: {name}" for name in self.returns or ()]
        for part, want, what in zip(got, expected, names, strict=True) if names else [(got, expected, case.what)]:
            expect_equal(part, want, what) if self.exact else expect_close(part, want, what, **self.close)

    def right(self, outcome, i):
        try:
            isinstance(outcome, Exception) or self.compare(self.read(outcome, self.cases()[i]), i)
        except Mismatch:
            return False
        return not isinstance(outcome, Exception)

    def named(self, got, i):
        """The registered mistake the answer made: one that gives what it gives on every case, else on case i; or
        two made together (`together`), when they give what it gives on every case and none of it is a crash."""
        fits = [
            m for m in self.ways if m.says and m not in self.chance(i) and agrees(got[i], self.outcomes(m.source)[i])
        ]
        fits = [m for m in fits if not self.right(self.outcomes(m.source)[i], i)]
        every = [m for m in fits if all(agrees(a, b) for a, b in zip(got, self.outcomes(m.source), strict=True))]
        if every or fits or any(isinstance(outcome, Exception) for outcome in got):
            return (every or fits or [None])[0]
        return next((m for m in self.together() if all(map(agrees, got, self.outcomes(m.source)))), None)

    def together(self):
        """Two (up to `combine`) registered mistakes made at once: the solution with both changes, both messages.

        Only where the exercise says its mistakes are independent parts (sinusoidal_table's): a message says what
        its own change does, which another change may undo.
        """
        if "together" not in self._kept:
            ways = [m for m in self.ways if m.edits and m.says and m.says.startswith("{what}: ")]
            self._kept["together"] = []
            for n in range(2, self.combine + 1):
                for group in itertools.combinations(ways, n):
                    try:
                        source = edited(self.solution, *(edit for m in group for edit in m.edits))
                        compile(source, self.name, "exec")
                    except (ValueError, SyntaxError):  # one change undoes another: they are not made together
                        continue
                    if len({m.code for m in group}) == n:
                        says = "; and ".join([group[0].says] + [m.says.removeprefix("{what}: ") for m in group[1:]])
                        self._kept["together"].append(Mistake(group[0].code, source, says))
        return self._kept["together"]

    def random(self, fn, i, runs=12):
        """True when `fn` gives different outcomes on case i when run again (it draws random numbers of its own)."""
        first = self.cases()[i].outcome(fn)
        return any(not agrees(first, self.cases()[i].outcome(fn)) for _ in range(runs - 1))

    def chance(self, i):
        """The registered mistakes that draw random numbers of their own on case i: named by that, never by value."""
        if ("random", i) not in self._kept:
            self._kept["random", i] = [m for m in self.ways if m.says and self.random(define(m.source, self.name), i)]
        return self._kept["random", i]

    def __call__(self, answer):
        """The check: return when `answer` is right on every case, else raise Mismatch (or the answer's crash)."""
        got = [case.outcome(answer) for case in self.cases()]
        for outcome in got:
            if isinstance(outcome, Exception) and not raised_by_the_answer(outcome):
                raise outcome  # None returned, not a function, or a fault of the check's own code
        wrong = [i for i in range(len(got)) if not self.right(got[i], i)]
        if not wrong:
            if self.chance(0) and self.random(answer, 0):  # a draw of its own can land on the right words by luck
                raise Mismatch(self.chance(0)[0].message(self.cases()[0], got[0]), self.chance(0)[0].code)
            return
        i, case = wrong[0], self.cases()[wrong[0]]
        mistake = self.chance(i)[0] if self.chance(i) and self.random(answer, i) else self.named(got, i)
        if mistake is None and isinstance(got[i], Exception):
            raise got[i]
        if mistake is None:
            value = self.read(got[i], case)
            code = self.families(value, self.expected(i), case) if self.families else None
            mistake = next((m for m in self.ways if m.code == code and m.says), None)  # a family names a registered one
        if mistake is None:
            self.compare(value, i)  # the generic comparison says what differs
        raise Mismatch(mistake.message(case, got[i]), mistake.code)
