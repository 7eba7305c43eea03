"""Work on many rows in short statements: ids of a bounded batch first, then one statement on exactly those ids,
so no statement holds its locks for long and a retention run never blocks the writers of a busy table."""

from collections.abc import Callable, Iterable, Iterator

from django.db.models import QuerySet


def in_batches(
    queryset: QuerySet,
    apply: Callable[[list], int],
    *,
    order_by: tuple[str, ...],
    batch_size: int,
    max_batches: int | None = None,
) -> int:
    """Call `apply(ids)` on the primary keys of `queryset`, `batch_size` at a time in `order_by` order (which an
    index of the queryset's filter should serve), until none is left or `max_batches` ran; returns the sum of what
    `apply` returned. Each batch commits on its own (autocommit), so a long backlog drains without a long lock.
    `apply` must take its rows out of `queryset` (delete them, or change what it filters on), or the loop stops
    at `max_batches` (unbounded: when a batch changed nothing)."""
    done = batches = 0
    while max_batches is None or batches < max_batches:
        ids = list(queryset.order_by(*order_by).values_list("pk", flat=True)[:batch_size])
        if not ids:
            break
        changed = apply(ids)
        done += changed
        batches += 1
        if len(ids) < batch_size or not changed:
            break
    return done


def delete_in_batches(queryset: QuerySet, **options) -> int:
    """Delete the rows of `queryset` in batches (`in_batches`); returns how many rows of its model went (rows
    of other tables removed or updated by their foreign keys' on_delete are not counted). Each delete repeats the
    queryset's filter: on a partitioned table (core.partitions) it then reaches only the partitions the filter's
    time window names instead of looking each id up in every one."""
    label = queryset.model._meta.label

    def delete(ids: list) -> int:
        _, per_model = queryset.filter(pk__in=ids).delete()
        return per_model.get(label, 0)

    return in_batches(queryset, delete, **options)


def keyset(queryset: QuerySet, *, key: str, batch_size: int) -> Iterator:
    """Every row of `queryset` in `key` order (a unique column, served by an index), read `batch_size` rows at a
    time after the last key seen: memory stays flat however many rows there are, and no statement pages with
    OFFSET. The queryset may be `.values()` or `.values_list()`; its rows must carry `key` (first for a
    values_list)."""
    last = None
    while True:
        page = queryset.order_by(key)
        if last is not None:
            page = page.filter(**{f"{key}__gt": last})
        rows = list(page[:batch_size])
        yield from rows
        if len(rows) < batch_size:
            return
        tail = rows[-1]
        last = tail[key] if isinstance(tail, dict) else tail[0] if isinstance(tail, tuple) else getattr(tail, key)


def purge(queryset: QuerySet, *, dry_run: bool = False, **options) -> int:
    """A retention rule's deletion: the rows of `queryset` deleted in batches, or only counted with `dry_run`."""
    return queryset.count() if dry_run else delete_in_batches(queryset, **options)


def purge_by_project(queryset: QuerySet, *, project_ids: Iterable, **options) -> int:
    """`purge` one project's rows at a time: on a table whose indexes start with the project (events, emails,
    jobs), each batch is then a range read of one index instead of a scan across every project's rows."""
    return sum(purge(queryset.filter(project_id=project_id), **options) for project_id in project_ids)
