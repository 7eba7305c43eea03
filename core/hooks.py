"""Extension points: how an app lets the apps above it plug in without importing them.

The module that calls an extension point declares it as a `Hook`, typed by what an implementation is (a callable's
signature, or an object's class), named by its dotted path, and documented with what an implementation must do:

    setup_facts: Hook[Callable[[Project], Any]] = Hook(
        "accounts.tenancy.registry.setup_facts", "fact(project) -> one figure of the setup state", keys=SETUP_FACTS
    )

The apps above register in their `AppConfig.ready` (or in a module it imports), each implementation under a key
(replacing the one before it) or as its own key (so registering twice changes nothing):

    setup_facts.register(project_has_template, key="hasTemplate")

    @usage_finders.register(key=("field", "segments"))
    def segments_using_field(project, field): ...

The owner reads `hook.implementations`, a plain dict (`.get(key)` for one, iterate the hook for all), so a call
costs what the dict lookup it replaces did. docs/architecture.md ("Hooks") lists every hook and who registers, and
a test keeps that list true.
"""

import inspect
import sys
from collections.abc import Callable, Hashable, Iterable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")


class Hook(Generic[T]):
    def __init__(self, name: str, doc: str, *, keys: Iterable[Hashable] | None = None) -> None:
        self.name = name
        self.doc = inspect.cleandoc(doc)
        # A closed set of keys (the figures of a page an app may answer for), or None for any.
        self.keys = tuple(keys) if keys is not None else None
        self.implementations: dict[Hashable, T] = {}
        # key -> the module that registered it, for the list in docs/architecture.md.
        self.registered_by: dict[Hashable, str] = {}

    def register(self, implementation: T | None = None, /, *, key: Hashable = None) -> T | Callable[[T], T]:
        """Add an implementation under `key` (by default itself); as `@hook.register` or `@hook.register(key=...)`."""
        registrant = sys._getframe(1).f_globals.get("__name__", "")

        def add(implementation: T) -> T:
            found = implementation if key is None else key
            if self.keys is not None and found not in self.keys:
                raise ValueError(f"Unknown key {found!r} of {self.name}; known: {', '.join(map(str, self.keys))}")
            self.implementations[found] = implementation
            self.registered_by[found] = registrant
            return implementation

        return add if implementation is None else add(implementation)

    def __iter__(self) -> Iterator[T]:
        return iter(self.implementations.values())

    def __repr__(self) -> str:
        return f"<Hook {self.name}: {len(self.implementations)} implementation(s)>"
