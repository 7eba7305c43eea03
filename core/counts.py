"""Counts that stay cheap however big a table grows: admin change lists and the operators' dashboard never read
every row of a million-row table to show a number."""

import json

from django.core.paginator import Paginator
from django.db import connections
from django.db.models import QuerySet
from django.utils.functional import cached_property

# Up to this many rows a count is exact; above it the figure is shown as "at least".
COUNT_CAP = 10_000


def capped_count(queryset: QuerySet, cap: int = COUNT_CAP) -> int:
    """The number of rows, read no further than `cap` (a result of `cap` means "that many or more")."""
    return queryset.order_by()[:cap].count()


class EstimatedCountPaginator(Paginator):
    """On PostgreSQL the planner's row estimate replaces COUNT(*) (which reads every row of a million-row table);
    page links stay approximate, pages themselves are exact."""

    @cached_property
    def count(self) -> int:
        # Where the list is read: the replica, for a change list shown (core.admin.ReplicaListsMixin).
        connection = connections[self.object_list.db]
        if connection.vendor != "postgresql":
            return super().count  # SQLite: the embedded, single-host installation, with tables to match
        sql, params = self.object_list.query.sql_with_params()
        with connection.cursor() as cursor:
            cursor.execute(f"EXPLAIN (FORMAT JSON) {sql}", params)
            plan = cursor.fetchone()[0]
        plan = json.loads(plan) if isinstance(plan, str) else plan
        estimate = int(plan[0]["Plan"]["Plan Rows"])
        # Small results are counted exactly, so a filtered list shows its true size.
        return super().count if estimate < COUNT_CAP else estimate
