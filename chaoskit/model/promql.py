"""An offline PromQL syntax check, so a promql probe's typo fails when the playbook loads, not mid-run.

A small lexer and recursive-descent parser for the PromQL that SLO probes use: selectors with label matchers,
ranges, subqueries, offset and @, the binary operators with Prometheus's precedence and vector matching, unary
signs, aggregations and the known functions with their argument counts. It checks syntax only, not types (a range
vector where an instant one belongs passes), and builds no tree: it only says what is wrong, and where.
"""

# Over 300 lines: one grammar: the lexer and the recursive-descent parser read together.

from __future__ import annotations

import re
from typing import NamedTuple, NoReturn

from chaoskit.registry import close_matches

FUNCTIONS = frozenset(
    """
    rate irate increase delta idelta deriv predict_linear histogram_quantile histogram_count histogram_sum
    histogram_fraction histogram_avg histogram_stddev histogram_stdvar abs ceil floor round exp ln log2 log10 sqrt
    clamp clamp_min clamp_max label_replace label_join vector scalar time timestamp absent absent_over_time changes
    resets sort sort_desc sort_by_label sort_by_label_desc day_of_month day_of_week day_of_year days_in_month hour
    minute month year sgn avg_over_time min_over_time max_over_time sum_over_time count_over_time quantile_over_time
    stddev_over_time stdvar_over_time last_over_time present_over_time mad_over_time deg rad pi acos asin atan acosh
    asinh atanh cos cosh sin sinh tan tanh double_exponential_smoothing holt_winters info
""".split()
)
_CLOCK = ("day_of_month", "day_of_week", "day_of_year", "days_in_month", "hour", "minute", "month", "year")
# (fewest, most) arguments, most None for no limit; a function not listed takes exactly one
ARITY: dict[str, tuple[int, int | None]] = {
    "time": (0, 0),
    "pi": (0, 0),
    "predict_linear": (2, 2),
    "histogram_quantile": (2, 2),
    "clamp_min": (2, 2),
    "clamp_max": (2, 2),
    "quantile_over_time": (2, 2),
    "histogram_fraction": (3, 3),
    "clamp": (3, 3),
    "double_exponential_smoothing": (3, 3),
    "holt_winters": (3, 3),
    "label_replace": (5, 5),
    "round": (1, 2),
    "info": (1, 2),
    "label_join": (3, None),
    "sort_by_label": (1, None),
    "sort_by_label_desc": (1, None),
    **{name: (0, 1) for name in _CLOCK},  # these default to the evaluation time
}
_WITH_PARAMETER = ("topk", "bottomk", "quantile", "count_values", "limitk", "limit_ratio")
# aggregation -> its argument count: those with a parameter (k, φ, the label) take it first
_WITHOUT_PARAMETER = ("sum", "min", "max", "avg", "group", "stddev", "stdvar", "count")
AGGREGATIONS = {name: 2 if name in _WITH_PARAMETER else 1 for name in _WITH_PARAMETER + _WITHOUT_PARAMETER}
_PRECEDENCE = {
    "or": 1,
    "and": 2,
    "unless": 2,
    "==": 3,
    "!=": 3,
    "<=": 3,
    "<": 3,
    ">=": 3,
    ">": 3,
    "+": 4,
    "-": 4,
    "*": 5,
    "/": 5,
    "%": 5,
    "atan2": 5,
    "^": 6,
}
_POW = _PRECEDENCE["^"]
_COMPARISONS = frozenset({"==", "!=", "<=", "<", ">=", ">"})
_SET_OPERATORS = frozenset({"and", "or", "unless"})
_NEVER_NAMES = frozenset({"bool", "on", "ignoring", "group_left", "group_right", "atan2"})  # Prometheus's list
_MATCH_OPS = ("=", "!=", "=~", "!~")
_OPS = ("==", "!=", "=~", "!~", "<=", ">=", *"=<>+-*/%^@(){}[],:")  # two-character ones first: longest wins

_SPACE = re.compile(r"(?:\s|#[^\n]*)*", re.ASCII)  # '#' comments run to the end of the line
_WORD = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")  # metric names may hold ':' (recording rules)
_LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")  # inside {} and [] a ':' is punctuation
_NUMBER_START = re.compile(r"\.?[0-9]")
_NUMBER = re.compile(
    r"0[xX]_?[0-9a-fA-F][0-9a-fA-F_]*|(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9][0-9_]*)(?:[eE][+-]?[0-9]+)?"
)
_DURATION = re.compile(r"(?:[0-9]+(?:ms|[smhdwy]))+")
_DURATION_ORDER = re.compile(r"([0-9]+y)?([0-9]+w)?([0-9]+d)?([0-9]+h)?([0-9]+m)?([0-9]+s)?([0-9]+ms)?")
_WORD_CHAR = re.compile(r"[a-zA-Z0-9_]")  # none may follow a number or duration: "5q" is one bad token
_BAD_NUMBER = re.compile(r"[a-zA-Z0-9_.]*")
_ESCAPE = re.compile(r"[abfnrtv\\'\"]|x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[0-7]{3}")
_AFTER_MAX = 30  # characters of context quoted in a message


class _Problem(Exception):
    """What is wrong with the query, ending with where: a message for the user."""


class Token(NamedTuple):
    kind: str  # "num" (numbers and durations: PromQL takes either in both places), "str", "word", "op", "end"
    text: str
    pos: int  # 0-based offset into the query


def promql_problem(query: str) -> str:
    """Empty when `query` parses as PromQL, else what is wrong and at which character (1-based), for a user."""
    try:
        _Parser(query).check()
    except _Problem as exc:
        return f"not PromQL: {exc}"
    except RecursionError:  # only absurd nesting gets here; say so rather than crash the loader
        return "not PromQL: nested too deeply to check"
    return ""


def _skip(pattern: re.Pattern[str], query: str, start: int) -> int:
    """Where a run of `pattern` (which may match nothing) starting at `start` ends."""
    found = pattern.match(query, start)
    return found.end() if found else start


def _string_end(query: str, start: int) -> int:
    quote, i = query[start], start + 1
    while i < len(query) and query[i] != quote:
        if query[i] == "\n" and quote != "`":
            break  # only a raw `...` string spans lines
        if query[i] == "\\" and quote != "`":
            escape = _ESCAPE.match(query, i + 1)
            if not escape or escape.group() in "'\"".replace(quote, ""):  # only the string's own quote escapes
                raise _Problem(f"bad escape {query[i : i + 2]!r} in a string at character {i + 1}")
            i = escape.end() - 1
        i += 1
    if i >= len(query) or query[i] != quote:
        raise _Problem(f"the string opened at character {start + 1} never closes")
    return i + 1


def _number_end(query: str, start: int) -> int:
    for pattern in (_DURATION, _NUMBER):
        found = pattern.match(query, start)
        ordered = pattern is _NUMBER or (found and _DURATION_ORDER.fullmatch(found.group()))  # 1h30m, not 30m1h
        if found and ordered and not _WORD_CHAR.match(query, found.end()):
            return found.end()
    text = query[start : _skip(_BAD_NUMBER, query, start)]
    raise _Problem(f"bad number or duration {text!r} at character {start + 1} (durations look like 30s, 5m, 1h30m)")


def lex(query: str) -> list[Token]:
    """The query's tokens, ending with an "end" token at len(query)."""
    tokens: list[Token] = []
    i, in_braces, in_brackets = 0, False, False  # inside {} and [] words differ (no ':', no Inf/NaN)
    while (i := _skip(_SPACE, query, i)) < len(query):
        if query[i] in "\"'`":
            kind, end = "str", _string_end(query, i)
        elif _NUMBER_START.match(query, i):
            kind, end = "num", _number_end(query, i)
        elif word := (_LABEL if in_braces or in_brackets else _WORD).match(query, i):
            kind, end = ("num" if not in_braces and word.group().lower() in ("inf", "nan") else "word"), word.end()
        elif op := next((op for op in _OPS if query.startswith(op, i)), ""):
            kind, end = "op", i + len(op)
            in_braces = op == "{" if op in ("{", "}") else in_braces
            in_brackets = op == "[" if op in ("[", "]") else in_brackets
        else:
            raise _Problem(f"unexpected character {query[i]!r} at character {i + 1}")
        tokens.append(Token(kind, query[i:end], i))
        i = end
    return [*tokens, Token("end", "", len(query))]


class _Parser:
    def __init__(self, query: str) -> None:
        self.query, self.tokens, self.i = query, lex(query), 0

    @property
    def tok(self) -> Token:
        return self.tokens[self.i]

    def at(self, *texts: str, ahead: int = 0) -> bool:
        token = self.tokens[min(self.i + ahead, len(self.tokens) - 1)]
        return token.kind in ("op", "word") and token.text.lower() in texts  # keywords are case-insensitive

    def take(self) -> Token:
        token = self.tok
        self.i += token.kind != "end"  # the end token stays current for every message after it
        return token

    def accept(self, *texts: str) -> bool:
        return self.at(*texts) and bool(self.take())

    def fail(self, wanted: str, since: int | None = None) -> NoReturn:
        """Expected `wanted` after what was read (from `since`, else the last token), found the current token."""
        last = self.tokens[self.i - 1] if self.i else None
        after = (
            " ".join(self.query[last.pos if since is None else since : last.pos + len(last.text)].split())
            if last
            else ""
        )
        after = after if len(after) <= _AFTER_MAX else "..." + after[3 - _AFTER_MAX :]
        found = "the end" if self.tok.kind == "end" else repr(self.tok.text)
        raise _Problem(
            f"expected {wanted}{f' after {after!r}' if after else ''}, found {found} at character {self.tok.pos + 1}"
        )

    def bad(self, token: Token, message: str, hint: str = "") -> NoReturn:
        raise _Problem(f"{message} at character {token.pos + 1}{hint}")

    def expect(self, text: str, wanted: str = "", since: int | None = None) -> None:
        if not self.accept(text):
            self.fail(wanted or repr(text), since)

    def number(self, wanted: str) -> None:
        if self.tok.kind != "num":
            self.fail(wanted)
        self.take()

    def check(self) -> None:
        if self.tok.kind == "end":
            raise _Problem("the query is empty")
        self.expr()
        if self.tok.kind != "end":
            self.fail("an operator or the end")

    def expr(self, lowest: int = 1) -> None:
        """Binary operators by precedence climbing: each loop takes those binding at least `lowest`."""
        if self.accept("+", "-"):
            self.expr(_POW)  # a sign binds like '*': only '^' binds tighter, so -x ^ 2 is -(x ^ 2)
        else:
            self.postfix(self.primary())
        while self.tok.kind in ("op", "word") and _PRECEDENCE.get(operator := self.tok.text.lower(), 0) >= lowest:
            self.matching(self.take())
            self.expr(_PRECEDENCE[operator] + (operator != "^"))  # '^' is right-associative, the rest left

    def matching(self, op: Token) -> None:
        """What may follow a binary operator: bool, on/ignoring (labels), then group_left/group_right."""
        name = op.text.lower()
        if self.at("bool") and name not in _COMPARISONS:
            self.bad(self.tok, f"bool goes only with a comparison (== != < <= > >=), not {op.text!r},")
        self.accept("bool")
        matched = self.accept("on", "ignoring") and self.labels()
        if self.at("group_left", "group_right"):
            group = self.take()
            if name in _SET_OPERATORS or not matched:
                self.bad(
                    group,
                    f"{group.text} does not go with {op.text!r}"
                    if name in _SET_OPERATORS
                    else f"{group.text} needs on(...) or ignoring(...) before it",
                )
            if self.at("("):
                self.labels()

    def labels(self) -> bool:
        """A parenthesised list of label names (plain or quoted), maybe empty, a trailing comma allowed."""
        self.expect("(")
        while not self.at(")"):
            if self.tok.kind != "str" and (self.tok.kind != "word" or ":" in self.tok.text):
                self.fail("a label name")
            self.take()
            if not self.accept(","):
                break
        self.expect(")", "',' or ')'")
        return True

    def primary(self) -> str:
        """One operand; returns what offset, @ and [range] may follow: "selector", or "other"."""
        token = self.tok
        word = token.text.lower() if token.kind == "word" else ""
        if self.accept("("):
            self.expr()
            self.expect(")", "an operator or ')'", token.pos + 1)
        elif token.kind in ("num", "str"):
            self.take()
        elif word in AGGREGATIONS and self.at("(", "by", "without", ahead=1):
            self.aggregation()
        elif word and self.at("(", ahead=1):
            self.call()
        elif self.at("{") or (word and word not in _NEVER_NAMES):
            if word:
                self.take()
            if self.at("{"):
                self.matchers(named=bool(word))
            return "selector"
        else:
            self.fail("an expression")
        return "other"

    def matchers(self, named: bool) -> None:
        """{label op "value", ...}; without a metric name, one matcher must reject the empty value (as Prometheus)."""
        opening, selects = self.take(), named
        while not self.at("}"):
            if self.tok.kind not in ("word", "str"):
                self.fail("a label name")
            if self.take().kind == "str" and not self.at(*_MATCH_OPS):
                selects = True  # {"metric.name"}: a quoted metric name
            else:
                if not self.at(*_MATCH_OPS):
                    self.fail("=, !=, =~ or !~")
                op = self.take().text
                if self.tok.kind != "str":
                    self.fail("a quoted string")
                empty = len(self.take().text) == 2  # just the quotes
                selects = selects or op in ("=~", "!~") or (op == "=") != empty
            if not self.accept(","):
                break
        self.expect("}", "',' or '}'")
        if not selects:
            self.bad(opening, "a selector without a metric name needs a matcher that rejects the empty value")

    def arguments(self, since: int | None = None) -> int:
        """(expr, ...); returns how many."""
        self.expect("(", since=since)
        if self.accept(")"):
            return 0
        count, start = 1, self.tok.pos
        self.expr()
        while self.accept(","):
            count, start = count + 1, self.tok.pos
            self.expr()
        self.expect(")", "an operator, ',' or ')'", start)
        return count

    def aggregation(self) -> None:
        name = self.take()
        since = self.tok.pos if self.at("by", "without") else None  # "expected '(' after 'by (job)'"
        grouped = self.accept("by", "without") and self.labels()
        count = self.arguments(since)
        if not grouped and self.accept("by", "without"):
            self.labels()
        self.arity(name, count, AGGREGATIONS[name.text.lower()], AGGREGATIONS[name.text.lower()])

    def call(self) -> None:
        name = self.take()
        if name.text not in FUNCTIONS:  # function names, unlike keywords, are case-sensitive
            guess = close_matches(name.text.lower(), FUNCTIONS)
            self.bad(name, f"unknown function {name.text!r}", f"; did you mean {guess[0]!r}?" if guess else "")
        self.arity(name, self.arguments(), *ARITY.get(name.text, (1, 1)))

    def arity(self, name: Token, count: int, fewest: int, most: int | None) -> None:
        if fewest <= count and (most is None or count <= most):
            return
        s = "" if fewest == most == 1 else "s"
        wanted = f"at least {fewest}" if most is None else f"{fewest}" if fewest == most else f"{fewest} or {most}"
        self.bad(name, f"{name.text} takes {wanted} argument{s}, got {count},")

    def postfix(self, kind: str) -> None:
        """[range], [range:step], offset and @ after an operand; only a selector takes a range, before any modifier."""
        modifiers: set[str] = set()
        while self.at("[", "offset", "@"):
            token = self.take()
            word = token.text.lower()
            if word == "[":
                self.number("a duration")
                if self.accept(":"):
                    if not self.at("]"):
                        self.number("a duration or ']'")
                    self.expect("]")
                    kind, modifiers = "subquery", set()
                    continue
                self.expect("]", "':' or ']'")
                if kind != "selector" or modifiers:
                    self.bad(
                        token,
                        "a range [...] goes before offset and @"
                        if modifiers
                        else "a range [...] needs a metric selector right before it (a subquery: [5m:1m])",
                    )
                kind = "range"
                continue
            if kind == "other" or word in modifiers:
                self.bad(
                    token,
                    f"{token.text} is given twice"
                    if word in modifiers
                    else f"{token.text} needs a metric selector, range or subquery before it",
                )
            modifiers.add(word)
            if word == "offset":
                self.accept("-")
                self.number("a duration")
            elif self.accept("start", "end"):
                self.expect("(")
                self.expect(")")
            else:
                self.accept("+", "-")
                self.number("a timestamp, start() or end()")
