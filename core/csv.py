"""The one way Herald writes CSV: cells that a spreadsheet would run as a formula are written as text.

Contact data comes from anyone holding a project's public key, so an export could carry `=HYPERLINK(...)` or
`=cmd|...` into the spreadsheet of the person who opens it. Following OWASP's guidance on CSV injection, a cell (or
header) that begins with `=`, `+`, `-`, `@`, a tab or a carriage return gets a single quote in front, which
spreadsheets read as "this is text"; a plain number ("-5", "+3.2", "1e-3") is left as it is, so figures stay
figures. Every CSV the service writes goes through `csv_writer`.
"""

import csv
import re
from collections.abc import Iterable
from typing import Any, TextIO

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def csv_cell(value: Any) -> str:
    """A cell's text, neutralised when a spreadsheet would take it for a formula (None is an empty cell)."""
    text = "" if value is None else str(value)
    if text.startswith(_FORMULA_START) and not _PLAIN_NUMBER.fullmatch(text):
        return "'" + text
    return text


class _SafeWriter:
    def __init__(self, stream: TextIO) -> None:
        self._writer = csv.writer(stream, lineterminator="\n")
        self._quoting_writer = csv.writer(stream, lineterminator="\n", quoting=csv.QUOTE_ALL)

    def writerow(self, row: Iterable[Any]) -> None:
        cells = [csv_cell(value) for value in row]
        # The csv module quotes a cell holding a line feed (the row's end) but not one holding a carriage return,
        # which spreadsheets and readers take for a line break too: a row with one is written fully quoted.
        (self._quoting_writer if any("\r" in cell for cell in cells) else self._writer).writerow(cells)


def csv_writer(stream: TextIO) -> _SafeWriter:
    """A CSV writer on `stream` (rows end in `\\n`) whose every cell, headers included, goes through `csv_cell`."""
    return _SafeWriter(stream)
