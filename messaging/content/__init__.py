"""Templates and rendering: the content of an email (see the package docstring of `messaging`)."""
