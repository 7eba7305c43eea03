"""Reachability in a workflow's graph: the questions the graph rules ask (would a transition close a loop, which
steps does deleting one leave unreachable). A workflow has tens of steps, so the graph is read whole."""

from collections.abc import Iterable

Edge = tuple  # (from step id, to step id)


def successors(edges: Iterable[Edge]) -> dict:
    found: dict = {}
    for source, target in edges:
        found.setdefault(source, set()).add(target)
    return found


def reachable(edges: Iterable[Edge], starts: Iterable) -> set:
    """Every step reachable from `starts` (the starts included)."""
    following = successors(edges)
    seen, todo = set(starts), list(starts)
    while todo:
        for target in following.get(todo.pop(), ()):
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


def closes_loop(edges: Iterable[Edge], source, target) -> bool:
    """Whether an edge `source -> target` would make a cycle: `source` is reachable from `target`."""
    return source == target or source in reachable(edges, [target])


def only_through(edges: list[Edge], steps: Iterable, removed) -> set:
    """`removed` and the steps reachable only through it: downstream of it, and not reachable from any step that is
    neither `removed` nor downstream of it once `removed` is gone."""
    downstream = reachable(edges, [removed])
    others = set(steps) - downstream
    remaining = [(source, target) for source, target in edges if removed not in (source, target)]
    return downstream - reachable(remaining, others)
