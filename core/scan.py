"""Helpers for scanning user text in linear time.

A regular expression that scans ahead from every candidate start (`<a[^>]*?href...`, `\\{\\{.*?\\}\\}`) reads the rest
of the text again for each start that has no end: quadratic in the text, minutes for a few hundred kilobytes. The
scanners of bodies and templates instead find each end once, with these two helpers (a search from a position is
remembered until a later position passes its result, and a search that found nothing answers for every later
position), and match only anchored, bounded pieces at known positions.
"""

import re


class NextOccurrence:
    """The first position of `needle` at or after a position. Asked at growing positions (as a scanner does), each
    part of the text is searched once."""

    def __init__(self, text: str, needle: str):
        self.text, self.needle = text, needle
        self.searched_from, self.found = len(text) + 1, -1

    def at_or_after(self, position: int) -> int:
        """The position, or -1 when there is none."""
        if not (self.searched_from <= position and (self.found < 0 or self.found >= position)):
            self.searched_from, self.found = position, self.text.find(self.needle, position)
        return self.found


class NextMatch:
    """The first match of `pattern` starting at or after a position, with the same economy: meant for closing
    patterns (`</a >`, `{% endraw %}`), whose matches cannot overlap."""

    def __init__(self, pattern: re.Pattern, text: str):
        self.pattern, self.text = pattern, text
        self.searched_from, self.found = len(text) + 1, None

    def at_or_after(self, position: int) -> re.Match | None:
        if not (self.searched_from <= position and (self.found is None or self.found.start() >= position)):
            self.searched_from, self.found = position, self.pattern.search(self.text, position)
        return self.found
