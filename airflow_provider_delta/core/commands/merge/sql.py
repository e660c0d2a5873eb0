"""Parse Delta's ``MERGE INTO`` statement into the clause model.

Grammar (Delta Lake / Databricks SQL)::

    MERGE [WITH SCHEMA EVOLUTION] INTO target [[AS] t] USING source [[AS] s] ON <condition>
      { WHEN MATCHED [AND <cond>] THEN { UPDATE SET * [EXCEPT (c, ...)] | UPDATE SET c = <v>, ... | DELETE }
      | WHEN NOT MATCHED [BY TARGET] [AND <cond>] THEN
            { INSERT * [EXCEPT (c, ...)] | INSERT (c, ...) VALUES (<v>, ...) }
      | WHEN NOT MATCHED BY SOURCE [AND <cond>] THEN { UPDATE SET c = <v>, ... | DELETE } } ...

The statement is split into clauses here; conditions and values stay SQL text for
:mod:`airflow_provider_delta.core.expressions`. A table without an alias is named by its last name
part (``MERGE INTO db.logs USING updates ON logs.id = updates.id``).

Example:
    >>> stmt = parse_merge_sql("MERGE INTO t USING s ON t.k = s.k WHEN MATCHED THEN DELETE")
    >>> stmt.source_name, stmt.spec.target_alias, stmt.spec.clauses[0].action
    ('s', 't', 'delete')
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from airflow_provider_delta.core.commands.merge.model import ActionKind, ClauseKind, MergeClause, MergeSpec
from airflow_provider_delta.exceptions import MergeError

__all__ = ["MergeStatement", "parse_merge_sql"]

_TOKEN = re.compile(
    r"""(?P<space>\s+|--[^\n]*|/\*.*?\*/)
      |(?P<str>'(?:[^'\\]|\\.|'')*'|"(?:[^"\\]|\\.)*")
      |(?P<quoted>`(?:[^`]|``)*`)
      |(?P<num>\d+(?:\.\d*)?(?:[eE][+-]?\d+)?[A-Za-z]*|\.\d+)
      |(?P<word>[A-Za-z_][A-Za-z_0-9]*)
      |(?P<op><=>|<=|>=|<>|!=|==|\|\||[-+*/%=<>(),.;\[\]:!&|^~])""",
    re.VERBOSE | re.DOTALL,
)
_RESERVED = frozenset({"USING", "ON", "WHEN", "AS", "INTO", "MATCHED", "NOT", "THEN"})


@dataclass(frozen=True)
class _Tok:
    kind: str
    text: str
    start: int
    end: int

    @property
    def upper(self) -> str:
        return self.text.upper() if self.kind == "word" else ""


@dataclass(frozen=True)
class MergeStatement:
    """A parsed statement: the clause model plus the table names it used (dotted, and as parts)."""

    spec: MergeSpec
    target_name: str
    source_name: str
    target_parts: tuple[str, ...] = ()
    source_parts: tuple[str, ...] = ()


def _tokenize(text: str) -> list[_Tok]:
    tokens, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise MergeError(
                f"Cannot parse MERGE statement: unexpected character {text[pos]!r} at position {pos}"
            )
        kind = m.lastgroup or ""
        if kind != "space":
            tokens.append(_Tok(kind, m.group(), m.start(), m.end()))
        pos = m.end()
    return tokens


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokenize(text)
        self.i = 0

    # -- token helpers
    def peek(self, offset: int = 0) -> _Tok | None:
        j = self.i + offset
        return self.tokens[j] if j < len(self.tokens) else None

    def error(self, expected: str) -> MergeError:
        tok = self.peek()
        found = f"{tok.text!r} at position {tok.start}" if tok else "the end of the statement"
        return MergeError(
            f"Cannot parse MERGE statement: expected {expected}, found {found}", clause="statement"
        )

    def keyword(self, *words: str) -> bool:
        """Consume the keywords when they come next (all of them), else consume nothing."""
        for k, word in enumerate(words):
            tok = self.peek(k)
            if tok is None or tok.upper != word:
                return False
        self.i += len(words)
        return True

    def expect(self, *words: str) -> None:
        if not self.keyword(*words):
            raise self.error(" ".join(words))

    def op(self, symbol: str) -> bool:
        tok = self.peek()
        if tok is not None and tok.kind == "op" and tok.text == symbol:
            self.i += 1
            return True
        return False

    def expect_op(self, symbol: str) -> None:
        if not self.op(symbol):
            raise self.error(repr(symbol))

    # -- pieces
    def name(self, what: str) -> list[str]:
        parts = []
        while True:
            tok = self.peek()
            if tok is None or tok.kind not in ("word", "quoted"):
                raise self.error(what)
            parts.append(tok.text[1:-1].replace("``", "`") if tok.kind == "quoted" else tok.text)
            self.i += 1
            if not self.op("."):
                return parts

    def alias(self) -> str | None:
        explicit = self.keyword("AS")
        tok = self.peek()
        if tok is not None and (tok.kind == "quoted" or (tok.kind == "word" and tok.upper not in _RESERVED)):
            return self.name("an alias")[0]
        if explicit:
            raise self.error("an alias after AS")
        return None

    def capture(self, stops: frozenset[str], *, comma: bool = False, paren: bool = False) -> str:
        """Text up to a top-level stop keyword (or ``,`` / closing ``)``), which is not consumed."""
        depth, case_depth, start = 0, 0, self.i
        while (tok := self.peek()) is not None:
            if tok.kind == "op" and tok.text == "(":
                depth += 1
            elif tok.kind == "op" and tok.text == ")":
                if depth == 0 and paren:
                    break
                depth -= 1
            elif tok.upper == "CASE":
                case_depth += 1
            elif tok.upper == "END" and case_depth:
                case_depth -= 1
            elif (
                depth == 0
                and case_depth == 0
                and (
                    tok.upper in stops
                    or (comma and tok.kind == "op" and tok.text == ",")
                    or (tok.kind == "op" and tok.text == ";")
                )
            ):
                break
            self.i += 1
        if self.i == start:
            raise self.error("an expression")
        return self.text[self.tokens[start].start : self.tokens[self.i - 1].end].strip()

    def column(self, what: str) -> str:
        """A (possibly qualified or nested) column name as written, backquotes kept."""
        start = self.i
        self.name(what)
        return self.text[self.tokens[start].start : self.tokens[self.i - 1].end]

    def column_list(self) -> tuple[str, ...]:
        self.expect_op("(")
        names = [self.column("a column name")]
        while self.op(","):
            names.append(self.column("a column name"))
        self.expect_op(")")
        return tuple(names)

    # -- grammar
    def statement(self) -> MergeStatement:
        self.expect("MERGE")
        evolution = self.keyword("WITH", "SCHEMA", "EVOLUTION")
        self.expect("INTO")
        target = self.name("the target table name")
        target_alias = self.alias() or target[-1]
        self.expect("USING")
        if (tok := self.peek()) is not None and tok.text == "(":
            raise MergeError(
                "Cannot parse MERGE statement: a subquery as source is not supported; pass the "
                "source rows as a table and name it",
                clause="USING",
            )
        source = self.name("the source table name")
        source_alias = self.alias() or source[-1]
        self.expect("ON")
        condition = self.capture(frozenset({"WHEN"}))
        clauses = []
        while self.keyword("WHEN"):
            clauses.append(self.clause())
        self.op(";")
        if self.peek() is not None:
            raise self.error("WHEN or the end of the statement")
        if not clauses:
            raise MergeError("Cannot parse MERGE statement: it has no WHEN clause", clause="statement")
        spec = MergeSpec(condition, source_alias, target_alias, tuple(clauses), evolution)
        return MergeStatement(spec, ".".join(target), ".".join(source), tuple(target), tuple(source))

    def clause(self) -> MergeClause:
        kind: ClauseKind
        if self.keyword("MATCHED"):
            kind = "matched"
        else:
            self.expect("NOT", "MATCHED")
            if self.keyword("BY", "SOURCE"):
                kind = "not_matched_by_source"
            else:
                self.keyword("BY", "TARGET")
                kind = "not_matched"
        condition = self.capture(frozenset({"THEN"})) if self.keyword("AND") else None
        self.expect("THEN")
        action: ActionKind
        if self.keyword("DELETE"):
            return MergeClause(kind, "delete", condition)
        if self.keyword("UPDATE"):
            action = "update"
            self.expect("SET")
        elif self.keyword("INSERT"):
            action = "insert"
        else:
            raise self.error("UPDATE, DELETE or INSERT")
        if self.op("*"):
            except_ = self.column_list() if self.keyword("EXCEPT") else ()
            clause = MergeClause(kind, action, condition, None, except_)
        else:
            clause = MergeClause(
                kind, action, condition, self.set_list() if action == "update" else self.values()
            )
        if not clause.is_valid_action():
            raise MergeError(
                f"Cannot parse MERGE statement: {action.upper()} is not allowed in "
                f"{clause.label(0).split(' clause')[0]}",
                clause="statement",
            )
        return clause

    def set_list(self) -> tuple[tuple[str, str], ...]:
        pairs = []
        while True:
            column = self.column("a column to set")
            self.expect_op("=")
            pairs.append((column, self.capture(frozenset({"WHEN"}), comma=True)))
            if not self.op(","):
                return tuple(pairs)

    def values(self) -> tuple[tuple[str, str], ...]:
        columns = self.column_list()
        self.expect("VALUES")
        self.expect_op("(")
        values = [self.capture(frozenset(), comma=True, paren=True)]
        while self.op(","):
            values.append(self.capture(frozenset(), comma=True, paren=True))
        self.expect_op(")")
        if len(values) != len(columns):
            raise MergeError(
                f"Cannot parse MERGE statement: INSERT lists {len(columns)} column(s) but {len(values)} value(s)",
                clause="INSERT",
            )
        return tuple(zip(columns, values, strict=True))


def parse_merge_sql(text: str) -> MergeStatement:
    """Parse a ``MERGE INTO`` statement.

    Args:
        text: the SQL statement.

    Returns:
        The clause model and the target and source names used in the text.

    Raises:
        MergeError: the text is not a MERGE statement this engine supports (the message says where).

    Example:
        >>> parse_merge_sql("MERGE WITH SCHEMA EVOLUTION INTO t USING s ON t.k = s.k "
        ...                 "WHEN NOT MATCHED THEN INSERT *").spec.schema_evolution
        True
    """
    if not isinstance(text, str) or not text.strip():
        raise MergeError("Cannot parse MERGE statement: empty text", clause="statement")
    return _Parser(text).statement()
