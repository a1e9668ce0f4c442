"""The journal of a suspended ``run_code`` run: its finished sub-calls, answered again when it resumes.

A run whose sub-call was deferred stops; what it leaves (its *state*, JSON)
lists, by sub-call number, every sub-call that finished (tool, canonical
arguments, the value or error message the program got), the deferred ones
(tool and arguments: the decision was made for exactly that call) and the
numbers whose ``tool/code-dispatch-start`` event is logged already.

A runtime that cannot snapshot its interpreter (``PythonSubprocessRuntime``)
runs the program again from its start. Each binding call is then matched
against the journal by its number: a finished one, with the same tool and
the same canonical arguments, is answered from the journal without entering
the pipeline (its body never sees a second call, no event is logged); the
deferred one runs with its decision; a call that differs (another tool,
other arguments, or the program ends before reaching the journal's calls)
fails the run with :func:`divergence_text`. So a program that resumes must
make the same calls in the same order: nothing random, no clock read, no
outside state between its calls decides what it calls next.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from dsh_codegen.codemode._texts import tool_expression
from dsh_codegen.json import dump_canonical_json

__all__ = ["JournalEntry", "RunJournal", "divergence_text"]

#: The ``kind`` of the state this module writes.
JOURNAL_KIND: Final = "journal"
#: How much of a call's arguments a divergence text quotes.
_QUOTED: Final = 200


@dataclass(frozen=True, slots=True)
class JournalEntry:
    """One sub-call by number: its tool and canonical arguments, and (finished) what the program got."""

    name: str
    arguments: str
    outcome: dict[str, Any] | None = None

    def call_text(self) -> str:
        arguments = self.arguments if len(self.arguments) <= _QUOTED else self.arguments[: _QUOTED - 3] + "..."
        return f"{tool_expression(self.name)}({arguments})"


def divergence_text(number: int, expected: JournalEntry | None, made: JournalEntry | None) -> str:
    """The failure of a resumed run whose program did not make the journal's call ``number``."""
    was = "no call" if expected is None else expected.call_text()
    now = "ended without it" if made is None else f"called {made.call_text()}"
    return (
        f"run_code could not resume: replay diverged at tool call {number}: the program {now} where the"
        f" suspended run made {was}. A run resumed after an approval replays its program from the start and"
        " must make the same tool calls in the same order (nothing random, no clock read and no outside"
        " state may decide the calls)"
    )


class RunJournal:
    """The finished and deferred sub-calls of one run, and the sub-calls whose start event is logged.

    Made empty for a fresh run, or from the state a suspended run left
    (:meth:`from_state`); a resumed run that suspends again writes its whole
    journal again (:meth:`state`).
    """

    __slots__ = ("announced", "entries", "expected", "pending", "replayed")

    def __init__(self) -> None:
        #: Finished sub-calls by number.
        self.entries: dict[int, JournalEntry] = {}
        #: Deferred sub-calls by number (their decision is for exactly this call).
        self.pending: dict[int, JournalEntry] = {}
        #: Numbers whose ``tool/code-dispatch-start`` event is logged.
        self.announced: set[int] = set()
        #: The numbers of the suspended run's calls (the program must make each again), and the ones it has.
        self.expected: frozenset[int] = frozenset()
        self.replayed: set[int] = set()

    @classmethod
    def from_state(cls, state: Any) -> RunJournal:
        """The journal of a suspended run's ``state`` (``ValueError`` naming the field when it is not one)."""
        journal = cls()
        if not isinstance(state, dict) or state.get("kind") != JOURNAL_KIND:
            raise ValueError("run_code state is not a journal of sub-calls")
        for key, into in (("finished", journal.entries), ("pending", journal.pending)):
            items = state.get(key)
            if not isinstance(items, list):
                raise ValueError(f"run_code journal: {key} must be a list")
            for index, item in enumerate(items):
                where = f"run_code journal: {key}[{index}]"
                if not isinstance(item, dict):
                    raise ValueError(f"{where} must be an object")
                number, name, arguments = item.get("n"), item.get("name"), item.get("arguments")
                if type(number) is not int or number < 1 or type(name) is not str or type(arguments) is not str:
                    raise ValueError(f"{where} needs n (a positive int), name and arguments (str)")
                outcome = item.get("outcome")
                if key == "finished" and not (
                    isinstance(outcome, dict) and ("value" in outcome or type(outcome.get("error")) is str)
                ):
                    raise ValueError(f"{where}.outcome must hold a value or an error message")
                into[number] = JournalEntry(name, arguments, dict(outcome) if outcome is not None else None)
        announced = state.get("announced")
        if not isinstance(announced, list) or not all(type(n) is int for n in announced):
            raise ValueError("run_code journal: announced must be a list of ints")
        journal.announced = set(announced)
        resume = state.get("resume")
        if "runtime" in state:
            # Resumed from a snapshot: the program makes again only the calls it was waiting for.
            count = state.get("count")
            if not isinstance(resume, list) or not all(type(n) is int for n in resume) or type(count) is not int:
                raise ValueError("run_code journal: a snapshot's resume must be a list of ints, with its count")
            journal.expected = frozenset(resume)
        else:
            journal.expected = frozenset({*journal.entries, *journal.pending})
        return journal

    def match(self, number: int, name: str, arguments: Any) -> tuple[JournalEntry | None, str | None]:
        """How the program's call ``number`` is answered: ``(entry, None)`` from the journal, ``(None, None)`` through the pipeline, ``(None, text)`` diverged."""
        if number not in self.expected:
            return None, None
        expected = self.entries.get(number) or self.pending[number]
        made = JournalEntry(name, dump_canonical_json(arguments))
        if made.name != expected.name or made.arguments != expected.arguments:
            return None, divergence_text(number, expected, made)
        self.replayed.add(number)
        return (expected if expected.outcome is not None else None), None

    def unreached(self) -> str | None:
        """The divergence text when the program ended before making a call of the suspended run, else ``None``."""
        for number in sorted(self.expected):
            if number not in self.replayed:
                return divergence_text(number, self.entries.get(number) or self.pending.get(number), None)
        return None

    def record(self, number: int, name: str, arguments: Any, outcome: dict[str, Any]) -> None:
        """A sub-call finished and the program got ``outcome`` (``{"value": v}`` or ``{"error": message}``)."""
        self.entries[number] = JournalEntry(name, dump_canonical_json(arguments), outcome)

    def state(self, deferred: dict[int, tuple[str, Any]]) -> dict[str, Any]:
        """The JSON state of the run suspended now, with its ``deferred`` sub-calls (number -> tool, arguments)."""
        return {
            "kind": JOURNAL_KIND,
            "finished": [
                {"n": n, "name": e.name, "arguments": e.arguments, "outcome": e.outcome}
                for n, e in sorted(self.entries.items())
            ],
            "pending": [
                {"n": n, "name": name, "arguments": dump_canonical_json(arguments)}
                for n, (name, arguments) in sorted(deferred.items())
            ],
            "announced": sorted(self.announced),
        }
