"""Pages of rows, as selectors return them and the API's page envelopes render them: numbered (`Page`) or keyset
(`CursorPage`)."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Page:
    rows: list
    page: int
    page_size: int
    total: int

    @property
    def total_pages(self) -> int:
        return (self.total + self.page_size - 1) // self.page_size


@dataclass(frozen=True)
class CursorPage:
    """`rows` after a cursor position; `cursor` names the next page (None on the last), `total` counts all rows
    on the first page and is 0 after it (docs/api/README.md, "Pagination")."""

    rows: list
    cursor: str | None
    has_more: bool
    total: int
