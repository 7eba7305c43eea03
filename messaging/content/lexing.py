"""Linear-time lexers for the Liquid sandbox, in place of python-liquid's (2.3).

python-liquid tokenizes with regular expressions that backtrack: an unclosed `{{` or `{%` followed by spaces costs
time quadratic in the rest of the template (16 KB: about a minute), every `(` inside a tag that no `..` follows
rescans the rest of the tag (16 KB: 10 s), a `[` and a quote without a closing `"]` the same, and a line of a
`{% liquid %}` tag ending in a long run of spaces the same again. The three lexers here produce the very same
tokens and errors (`test_the_template_lexers_give_the_librarys_tokens_and_errors` compares them with the library's on
generated templates) with `str.find`, a bisection over precomputed positions and anchored matches, so that every
character is looked at a bounded number of times whatever the input:

- `tokenize_template` splits a template into content, output and tag tokens (the `Environment.tokenizer` hook);
- `tokenize_expression` splits the expression of one output or tag (used through `Stream` and `Output`);
- `tokenize_liquid_lines` splits the body of a `{% liquid %}` tag (used through `LiquidTag`).
"""

import re
from collections.abc import Iterator

from liquid import Environment
from liquid.ast import BlockNode, Node
from liquid.builtin.expressions import FilteredExpression
from liquid.builtin.output import Output as _LibraryOutput
from liquid.builtin.tags.liquid_tag import LiquidTag as _LibraryLiquidTag
from liquid.exceptions import LiquidSyntaxError
from liquid.parser import get_parser
from liquid.stream import TokenStream
from liquid.token import (
    TOKEN_COLON,
    TOKEN_COMMA,
    TOKEN_COMMENT,
    TOKEN_CONTENT,
    TOKEN_DOC,
    TOKEN_DOT,
    TOKEN_DPIPE,
    TOKEN_EOF,
    TOKEN_EXPRESSION,
    TOKEN_FLOAT,
    TOKEN_IDENTINDEX,
    TOKEN_IDENTSTRING,
    TOKEN_ILLEGAL,
    TOKEN_INTEGER,
    TOKEN_LBRACKET,
    TOKEN_LPAREN,
    TOKEN_OUTPUT,
    TOKEN_PIPE,
    TOKEN_RANGE,
    TOKEN_RANGE_LITERAL,
    TOKEN_RBRACKET,
    TOKEN_RPAREN,
    TOKEN_SKIP,
    TOKEN_STRING,
    TOKEN_TAG,
    TOKEN_WORD,
    Token,
    operators,
)

from core.scan import NextMatch, NextOccurrence

_SPACES = re.compile(r"\s*")
_WORD = re.compile(r"\w+")


def _right_trimmed(source: str, start: int, end: int) -> int:
    """The end of source[start:end] without its trailing whitespace (what a `(?<!\\s)` after a greedy group keeps)."""
    return start + len(source[start:end].rstrip())


# Templates ---------------------------------------------------------------------------------------------------------

_RAW = (re.compile(r"\{%-?\s*raw\s*(-?)%\}"), re.compile(r"\{%-?\s*endraw\s*(-?)%\}"))
_DOC = (re.compile(r"\{%-?\s*doc\s*(-?)%\}"), re.compile(r"\{%-?\s*enddoc\s*(-?)%\}"))


class _TemplateScanner:
    """The token rules of python-liquid's template lexer (`liquid.lex`), tried in its order at one position: a raw
    block, a doc block, an output statement, a tag, else content up to the next `{{` or `{%`."""

    def __init__(self, source: str):
        self.source = source
        self.closers: dict[re.Pattern, NextMatch] = {}
        self.output_end, self.tag_end = NextOccurrence(source, "}}"), NextOccurrence(source, "%}")
        self.next_output, self.next_tag = NextOccurrence(source, "{{"), NextOccurrence(source, "{%")

    def block(self, position: int, rules: tuple[re.Pattern, re.Pattern]):
        """`{% raw %}...{% endraw %}` (or doc): the opening tag and the first closing tag after it, or None."""
        opening_rule, closing_rule = rules
        opening = opening_rule.match(self.source, position)
        if opening is None:
            return None
        if closing_rule not in self.closers:
            self.closers[closing_rule] = NextMatch(closing_rule, self.source)
        closing = self.closers[closing_rule].at_or_after(opening.end())
        return None if closing is None else (opening, closing)

    def _delimited(self, position: int, name_end: int, closer: NextOccurrence):
        """What follows an opening delimiter's name: `\\s*(?P<inner>...)(?<!\\s)\\s*(?P<trim>-?)<closer>` with the
        inner part stopping at the first `-<closer>` or `<closer>`. Returns (inner start, inner end, trim, end)."""
        source = self.source
        inner_start = _SPACES.match(source, name_end).end()
        close = closer.at_or_after(inner_start)
        if close < 0:
            return None
        stop = close - 1 if close - 1 >= inner_start and source[close - 1] == "-" else close
        # Nothing but whitespace: the pattern backtracks to an empty inner part just after the name.
        inner = (inner_start, _right_trimmed(source, inner_start, stop)) if stop > inner_start else (name_end, name_end)
        return inner, source[stop] == "-", close + 2

    def output(self, position: int):
        """`{{ expression }}`: (expression span, right trim, end) or None."""
        source = self.source
        start = position + 2
        if source.startswith("-", start):
            start += 1
        return self._delimited(position, start, self.output_end)

    def tag(self, position: int):
        """`{% name expression %}`: (name span, expression span, right trim, end) or None."""
        source = self.source
        start = position + 2
        if source.startswith("-", start):
            start += 1
        name_start = _SPACES.match(source, start).end()
        if source.startswith("#", name_start):
            name_end = name_start + 1
        else:
            word = _WORD.match(source, name_start)
            if word is None:
                return None
            name_end = word.end()
        rest = self._delimited(position, name_end, self.tag_end)
        if rest is None:
            return None
        expression, trim, end = rest
        return (name_start, name_end), expression, trim, end

    def content_end(self, position: int) -> tuple[int, str | None]:
        """Content runs for at least one character, up to the next `{{` or `{%` (or the end, or a final newline:
        `$`). Returns its end and the right-trim dash of the delimiter that ends it ('' or '-'; None at the end)."""
        source, length = self.source, len(self.source)
        ends = [end for end in (self.next_output.at_or_after(position + 1), self.next_tag.at_or_after(position + 1))]
        delimiter = min((end for end in ends if end >= 0), default=-1)
        at_end = length - 1 if source.endswith("\n") and length - 1 > position else length
        if 0 <= delimiter < at_end:
            return delimiter, "-" if source.startswith("-", delimiter + 2) else ""
        return at_end, None


def tokenize_template(source: str) -> Iterator[Token]:
    """The tokens python-liquid's template lexer yields for `source` (its `_tokenize_template` loop, rule by rule)."""
    scanner = _TemplateScanner(source)
    position, length = 0, len(source)
    lstrip = False
    comment_depth, comment_index, comment_text = 0, 0, []
    while position < length:
        start = position
        kind, tag_name = None, None
        if source.startswith("{%", position):
            for block_kind, rules in (("RAW", _RAW), ("DOC", _DOC)):
                found = scanner.block(position, rules)
                if found:
                    kind, (opening, closing) = block_kind, found
                    position = closing.end()
                    break
            else:
                tag = scanner.tag(position)
                if tag:
                    kind = TOKEN_TAG
                    (name_start, name_end), (expr_start, expr_end), trim, position = tag
                    tag_name = source[name_start:name_end]
        elif source.startswith("{{", position):
            output = scanner.output(position)
            if output:
                kind = TOKEN_OUTPUT
                (expr_start, expr_end), trim, position = output
        if kind is None:
            kind = TOKEN_CONTENT
            position, rstrip = scanner.content_end(position)
        value = source[start:position]

        if comment_depth:
            if kind == TOKEN_TAG:
                if tag_name == "endcomment":
                    comment_depth -= 1
                    if not comment_depth:
                        yield Token(TOKEN_COMMENT, "".join(comment_text), start_index=comment_index, source=source)
                        comment_index = 0
                        comment_text.clear()
                        yield Token(TOKEN_TAG, tag_name, start_index=name_start, source=source)
                        lstrip = trim
                        continue
                elif tag_name == "comment":
                    comment_depth += 1
            comment_text.append(value)
            continue

        if kind == TOKEN_OUTPUT:
            yield Token(TOKEN_OUTPUT, value, start_index=start, source=source)
            yield Token(TOKEN_EXPRESSION, source[expr_start:expr_end], start_index=expr_start, source=source)
            lstrip = trim
            continue
        if kind == TOKEN_TAG:
            yield Token(TOKEN_TAG, tag_name, start_index=name_start, source=source)
            lstrip = trim
            if expr_end > expr_start:
                yield Token(TOKEN_EXPRESSION, source[expr_start:expr_end], start_index=expr_start, source=source)
            if tag_name == "comment":
                if not comment_depth:
                    comment_index = position
                comment_depth += 1
            continue
        if kind == "RAW":
            kind, value = TOKEN_CONTENT, source[opening.end() : closing.start()]
            lstrip = bool(opening.group(1))  # the library takes the opening tag's trim here
        elif kind == "DOC":
            kind, value = TOKEN_DOC, source[opening.end() : closing.start()]
            lstrip = bool(closing.group(1))
        else:
            if lstrip:
                value = value.lstrip()
            if rstrip:
                value = value.rstrip()
            if not value:
                continue
            if value.startswith(("{{", "{%")):
                message = (
                    "expected '}}', found end of file"
                    if value.startswith("{{")
                    else "missing tag name or closing delimiter"
                )
                raise LiquidSyntaxError(
                    message,
                    token=Token(TOKEN_EOF, value=source[start:position], start_index=start, source=source),
                )
        yield Token(kind, value, start_index=start, source=source)


# Expressions -------------------------------------------------------------------------------------------------------

# python-liquid's expression rules (liquid.builtin.expressions._tokenize) after the four that start with `(`, `[` or a
# quote, which `tokenize_expression` decides itself; the order is the library's.
_OTHER_RULES = re.compile(
    "|".join(
        f"(?P<{name}>{pattern})"
        for name, pattern in (
            (TOKEN_RANGE, r"\.\."),
            (TOKEN_FLOAT, r"-?\d+\.(?!\.)\d*"),
            (TOKEN_INTEGER, r"-?\d+\b"),
            (TOKEN_DOT, r"\."),
            (TOKEN_WORD, r"\w[\w\-]*\??"),
            (TOKEN_LPAREN, r"\("),
            (TOKEN_RPAREN, r"\)"),
            (TOKEN_LBRACKET, r"\["),
            (TOKEN_RBRACKET, r"]"),
            (TOKEN_COLON, r":"),
            (TOKEN_COMMA, r","),
            (TOKEN_DPIPE, r"\|\|"),
            (TOKEN_PIPE, r"\|"),
            ("OP", r"[!=<>]{1,2}"),
            (TOKEN_SKIP, r"[ \n\t\r]+"),
            (TOKEN_ILLEGAL, r"."),
        )
    ),
    re.DOTALL,
)
_IDENT_INDEX = re.compile(r"\[\s*(-?\d+)\s*]")
_IDENT_STRING_OPENING = re.compile(r"\[\s*([\"'])")
_IDENT_STRING_CLOSING = {quote: re.compile(rf"{quote}\s*]") for quote in "\"'"}
_KEYWORDS = frozenset(
    [
        "true",
        "false",
        "nil",
        "null",
        "empty",
        "blank",
        "and",
        "or",
        "contains",
        "not",
        "in",
        "offset",
        "limit",
        "reversed",
        "cols",
        "continue",
        "with",
        "for",
        "as",
        "if",
        "else",
        "required",
    ]
)


def tokenize_expression(source: str, parent_token: Token) -> Iterator[Token]:
    """The tokens python-liquid's expression lexer yields for `source`, the expression of one output or tag.

    Its rules are tried in order at each position. Two of them scan ahead: `(` is a range literal when a `..` starts
    two or more characters after it (else a parenthesis), and `[ "` opens a quoted key that ends at the first `" ]`.
    Both are answered from positions found once per expression instead of a scan per character.
    """
    last_range = source.rfind("..")
    closings: dict[str, NextMatch] = {}
    position, length = 0, len(source)
    while position < length:
        start, char = position, source[position]
        kind = value = None
        if char == "(":
            kind = TOKEN_RANGE_LITERAL if last_range >= position + 2 else TOKEN_LPAREN
            value, position = "(", position + 1
        elif char == "[":
            index = _IDENT_INDEX.match(source, position)
            if index:
                kind, value, position = TOKEN_IDENTINDEX, index.group(1), index.end()
            elif opening := _IDENT_STRING_OPENING.match(source, position):
                quote = opening.group(1)
                if quote not in closings:
                    closings[quote] = NextMatch(_IDENT_STRING_CLOSING[quote], source)
                closing = closings[quote].at_or_after(opening.end())
                if closing is not None:
                    kind, value, position = TOKEN_IDENTSTRING, source[opening.end() : closing.start()], closing.end()
            if kind is None:
                kind, value, position = TOKEN_LBRACKET, "[", position + 1
        elif char in "\"'":
            closing = source.find(char, position + 1)
            if closing >= 0:
                kind, value, position = TOKEN_STRING, source[position + 1 : closing], closing + 1
        if kind is None:
            match = _OTHER_RULES.match(source, position)
            kind, value, position = match.lastgroup, match.group(), match.end()
            if kind == TOKEN_WORD and value in _KEYWORDS:
                kind = value
            elif kind == "OP":
                if value not in operators:
                    raise LiquidSyntaxError(
                        f"unknown operator {value!r}",
                        token=Token(
                            kind, value, start_index=parent_token.start_index + start, source=parent_token.source
                        ),
                    )
                kind = operators[value]
            elif kind == TOKEN_SKIP:
                continue
            elif kind == TOKEN_ILLEGAL:
                raise LiquidSyntaxError(
                    f"unexpected {value!r}",
                    token=Token(kind, value, start_index=parent_token.start_index + start, source=parent_token.source),
                )
        yield Token(kind, value, start_index=parent_token.start_index + start, source=parent_token.source)


# `{% liquid %}` --------------------------------------------------------------------------------------------------

_LINE_NAME = re.compile(r"[ \t]*(#|\w+)[ \t]*")
_LINE_BREAKS = re.compile(r"[\r\n]+")


def tokenize_liquid_lines(source: str, token: Token) -> Iterator[Token]:
    """The tokens python-liquid yields for the body of a `{% liquid %}` tag: one tag per line, its name, then the
    rest of the line without trailing spaces, tabs and carriage returns as its expression."""
    position, length = 0, len(source)
    while position < length:
        line = _LINE_NAME.match(source, position)
        if line is None:
            breaks = _LINE_BREAKS.match(source, position)
            if breaks is None:
                raise LiquidSyntaxError(
                    f"expected newline delimited tag expressions, found {source[position]!r}", token=token
                )
            position = breaks.end()
            continue
        expr_start = line.end()
        newline = source.find("\n", expr_start)
        line_end = length if newline < 0 else newline
        expr_end = expr_start + len(source[expr_start:line_end].rstrip(" \t\r"))
        yield Token(TOKEN_TAG, line.group(1), start_index=token.start_index + line.start(1), source=token.source)
        if expr_end > expr_start:
            yield Token(
                TOKEN_EXPRESSION,
                source[expr_start:expr_end],
                start_index=token.start_index + expr_start,
                source=token.source,
            )
        position = line_end
        while position < length and source[position] == "\n":
            position += 1


# Wiring: where the library calls its own lexers ----------------------------------------


class TemplateTooLong(LiquidSyntaxError):
    """More tokens than a template may have (a syntax error for the library, which passes it on unchanged)."""


class TokenBudget:
    """The tokens one template may still produce. python-liquid parses at some tens of microseconds a token, so a
    2 MB template of `{{a}}` or `((((` takes the better part of a minute even with linear lexers: the budget bounds
    the parse whatever the size."""

    def __init__(self, limit: int | None):
        self.limit, self.left = limit, limit

    def counted(self, tokens: Iterator[Token]) -> Iterator[Token]:
        if self.limit is None:
            yield from tokens
            return
        for token in tokens:
            self.left -= 1
            if self.left < 0:
                raise TemplateTooLong(
                    f"template too long: more than {self.limit:,} tokens (text, tags, outputs and their parts)",
                    token=None,
                )
            yield token


class Stream(TokenStream):
    """A token stream whose tags' expressions are split by `tokenize_expression`, within one budget of tokens."""

    def __init__(self, tokens: Iterator[Token], block_depth_carry: int = 0, *, budget: TokenBudget):
        super().__init__(budget.counted(tokens), block_depth_carry)
        self.budget = budget

    def into_inner(self, *, tag: Token | None = None, eat: bool = True) -> TokenStream:
        token = self.current
        if token.kind != TOKEN_EXPRESSION:
            raise LiquidSyntaxError("missing expression", token=tag or token)
        if eat:
            next(self)
        return TokenStream(self.budget.counted(tokenize_expression(token.value, parent_token=token)))


class Output(_LibraryOutput):
    """Output statements (`{{ ... }}`), their expression split by `tokenize_expression`."""

    def parse(self, stream: TokenStream):
        token = stream.eat(TOKEN_OUTPUT)
        expr_token = stream.expect(TOKEN_EXPRESSION)
        tokens = stream.budget.counted(tokenize_expression(expr_token.value, expr_token))
        expression = FilteredExpression.parse(self.env, TokenStream(tokens))
        return self.node_class(token, expression)


class LiquidTag(_LibraryLiquidTag):
    """`{% liquid %}`, its lines split by `tokenize_liquid_lines` into a `Stream` (the library's `parse`, with those
    two names changed)."""

    def parse(self, stream: TokenStream) -> Node:
        token = stream.eat(TOKEN_TAG)
        if stream.current.kind == TOKEN_EOF:  # an empty tag
            return self.node_class(token, None, block=BlockNode(token, []))
        if stream.current.kind == TOKEN_TAG:
            return self.node_class(token, None, block=get_parser(self.env).parse_block(stream, end=()))
        lines = stream.expect(TOKEN_EXPRESSION)
        body = Stream(
            tokenize_liquid_lines(lines.value, token=lines), block_depth_carry=stream.block_depth, budget=stream.budget
        )
        return self.node_class(token, lines, block=get_parser(self.env).parse_block(body, end=()))


class LinearEnvironment(Environment):
    """A Liquid environment whose templates, expressions and `{% liquid %}` bodies are split by the lexers above,
    at most `token_limit` tokens a template (None: no limit)."""

    token_limit: int | None = None

    def tokenizer(self):
        return tokenize_template

    def _parse(self, source: str) -> list[Node]:
        return get_parser(self).parse(Stream(tokenize_template(source), budget=TokenBudget(self.token_limit)))

    def setup_tags_and_filters(self, *, extra: bool = False) -> None:
        super().setup_tags_and_filters(extra=extra)
        self.tags[TOKEN_OUTPUT] = Output(self)
        self.tags[LiquidTag.name] = LiquidTag(self)
