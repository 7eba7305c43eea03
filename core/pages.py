"""A numbered page of rows, as selectors return it and the API's page envelopes render it."""

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
