"""One declaration per job: its options (name, type, default, doc), engines, default engine, table arity.

Each job module declares ``JOB = JobDefinition(...)`` next to its ``run`` function. That one object is
what every side reads:

- the job's operator takes its arguments from it: one argument per option (templated, shown in the
  task's Rendered Template view), checked when the DAG is parsed and again after rendering, with
  "did you mean ..." for a misspelt name (``operators/job_arguments.py``);
- a rendered string becomes the declared type in one place, :meth:`Option.convert` (a template
  renders to a string unless the DAG has ``render_template_as_native_obj=True``);
- the job runner validates the spec's options before the job runs, and the job reads them back
  (defaults filled in) with ``ctx.option(name)``;
- the docs (operator docstrings, the README's job table, ``python -m airflow_provider_delta.jobs.registry``)
  list the options from it.

Standard library only, and no pyspark: the Airflow layer imports these declarations at DAG parse time.

Example:
    >>> JOB = JobDefinition(
    ...     name="checkpoint",
    ...     summary="Checkpoint the newest version.",
    ...     options=(Option("cleanup_log", bool, True, "Also delete expired log files."),),
    ...     engines=("local", "spark"),
    ...     default_engine="local",
    ... )
    >>> JOB.validate({"cleanup_log": "False"})
    {'cleanup_log': False}
    >>> JOB.unknown_options_message(["cleanup"])
    "unknown option 'cleanup' (did you mean 'cleanup_log'?); its options: cleanup_log"
"""

from __future__ import annotations

import ast
import difflib
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from airflow_provider_delta.exceptions import JobSpecError

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

Engine = Literal["spark", "local"]
ENGINES: tuple[Engine, ...] = ("spark", "local")

_MISSING: Any = object()
# Values a template or an XCom will only provide later: not checkable when the DAG is parsed.
_TEMPLATE_MARKERS = ("{{", "{%")
# What a template renders for "no value": Python's None, JSON's null, nothing.
_NONE_TEXTS = ("", "None", "null")


def _kinds(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def _type_name(kind: type | tuple[type, ...]) -> str:
    return " or ".join(k.__name__ for k in _kinds(kind))


def is_deferred_value(value: Any) -> bool:
    """Whether ``value`` is only known at run time: a Jinja template string, or an XComArg-like object."""
    if isinstance(value, str):
        return any(marker in value for marker in _TEMPLATE_MARKERS)
    if isinstance(value, dict):
        return any(is_deferred_value(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(is_deferred_value(v) for v in value)
    return not isinstance(value, int | float | bool | type(None))


def _parse_text(text: str, kind: type) -> Any:
    """``text`` as a value of ``kind`` (bool, int, float, list, dict); raises ValueError when it is not one."""
    if kind is bool:
        lowered = text.lower()
        if lowered not in ("true", "false"):
            raise ValueError(text)
        return lowered == "true"
    if kind is int:
        return int(text)
    if kind is float:
        return float(text)
    if kind in (list, dict):
        try:
            value = json.loads(text)
        except ValueError:
            value = ast.literal_eval(text)  # Python's repr: what a list or dict renders to
        if isinstance(value, tuple) and kind is list:
            value = list(value)
        if not isinstance(value, kind):
            raise ValueError(text)
        return value
    raise ValueError(text)


@dataclass(frozen=True)
class Option:
    """One option of a job, and so one argument of its operator.

    Args:
        name: the key in ``job_options`` / the spec's ``options``, and the operator's argument.
        kind: the JSON type(s) the value must have (``bool``, ``int``, ``float``, ``str``, ``list``,
            ``dict``, or a tuple of them). ``int`` refuses ``True``/``False``; ``float`` accepts ints.
        default: the value when the option is absent (``None``: no default, the job decides).
        doc: one sentence for the docs.
        choices: the allowed values, when the option is an enumeration.
        items: the type of each element of a ``list`` option.
        spark_only: the option needs engine ``spark`` (e.g. data read by Spark).
        aliases: names users may try for it (Spark's ``mergeSchema`` for ``schema_mode``): an unknown
            option with such a name gets "did you mean" this one.
        minimum: the smallest value a number option takes.
        required: the job cannot run without it (the operator's argument has no default).
        renderer: how Airflow's Rendered Template view shows the rendered value (``sql``, ``json``);
            default ``json`` for lists and dicts.
    """

    name: str
    kind: type | tuple[type, ...]
    default: Any = None
    doc: str = ""
    choices: tuple[Any, ...] = ()
    items: type | None = None
    spark_only: bool = False
    aliases: tuple[str, ...] = ()
    minimum: float | None = None
    required: bool = False
    renderer: str | None = None

    def convert(self, value: Any, where: str) -> Any:
        """``value`` as the declared type: a (rendered) string is parsed, anything else is returned as is.

        The one place where a template's output becomes the option's type: ``"24"`` -> ``24`` for an
        ``int``, ``"False"`` -> ``False`` for a ``bool``, ``"['a', 'b']"`` or ``'["a"]'`` -> a list;
        ``"None"``, ``"null"`` and ``""`` -> None (the option is absent). An option that takes strings
        keeps them.

        Raises:
            JobSpecError: the string is not a value of the declared type (naming the option).
        """
        kinds = _kinds(self.kind)
        if not isinstance(value, str) or str in kinds:
            return value
        text = value.strip()
        if text in _NONE_TEXTS:
            return None
        for kind in kinds:
            try:
                return _parse_text(text, kind)
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                continue
        raise JobSpecError(
            f"{where}: option {self.name!r} must be {self.describe_type()}, found {value!r} "
            "(a string that does not convert to it)"
        )

    def check(self, value: Any, where: str) -> Any:
        """``value`` if it fits this option; raises ``JobSpecError`` naming the option otherwise."""
        if value is None:
            return None
        if not any(_fits(value, k) for k in _kinds(self.kind)):
            raise JobSpecError(
                f"{where}: option {self.name!r} must be {_type_name(self.kind)}, "
                f"found {value!r} ({type(value).__name__})"
            )
        if self.choices and value not in self.choices:
            raise JobSpecError(
                f"{where}: option {self.name!r} must be one of {', '.join(map(repr, self.choices))}, found {value!r}"
            )
        if self.minimum is not None and isinstance(value, int | float) and value < self.minimum:
            raise JobSpecError(f"{where}: option {self.name!r} must be >= {self.minimum:g}, found {value!r}")
        if self.items is not None and isinstance(value, list):
            for i, item in enumerate(value):
                if not _fits(item, self.items):
                    raise JobSpecError(
                        f"{where}: option {self.name!r} must be a list of {self.items.__name__}, "
                        f"found {item!r} at index {i}"
                    )
        return value

    def describe_type(self) -> str:
        """The type as the docs show it: ``str, one of 'append', 'overwrite'``, ``list[str]``."""
        text = _type_name(self.kind)
        if self.items is not None:
            text = text.replace("list", f"list[{self.items.__name__}]", 1)
        if self.choices:
            text += ", one of " + ", ".join(repr(c) for c in self.choices)
        if self.minimum is not None:
            text += f", >= {self.minimum:g}"
        return text

    @property
    def template_renderer(self) -> str | None:
        """The Rendered Template view's renderer for this argument (None: plain text)."""
        if self.renderer is not None:
            return self.renderer
        return "json" if set(_kinds(self.kind)) & {list, dict} else None


def _fits(value: Any, kind: type) -> bool:
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    return isinstance(value, kind)


@dataclass(frozen=True, kw_only=True)
class JobDefinition:
    """What a job is: its name, options, where it runs, whether it takes a list of tables.

    Args:
        name: the job's name (its key in :data:`airflow_provider_delta.jobs.registry.JOBS`).
        summary: one sentence for the docs.
        options: every option the job reads (each one an argument of the job's operator).
        engines: where it may run: ``"spark"`` (a Spark driver, spark-submit) and/or ``"local"``
            (the calling process, the Airflow task, without Spark: for jobs that move no data).
        default_engine: the engine when the task does not choose one (one of ``engines``).
        multi_table: the job may be given a list of tables, run one after the other in one process,
            with one result per table (maintenance jobs).
        app_transaction: the job commits data and records Delta's ``txn`` (idempotent Airflow retries).
        outlet: a successful run changes the table's data or schema, so the operator declares the
            table as the task's outlet (an asset event for data-aware scheduling). Maintenance that
            changes no data (checkpoint, vacuum) leaves it False.
        check: cross-option rules (``"pass exactly one of rows and source"``), called with the
            validated options (defaults filled); raises ``JobSpecError``.
    """

    name: str
    summary: str
    options: tuple[Option, ...] = ()
    engines: tuple[Engine, ...]
    default_engine: Engine
    multi_table: bool = False
    app_transaction: bool = False
    outlet: bool = False
    check: Callable[[Mapping[str, Any]], None] | None = None
    _by_name: dict[str, Option] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_name", {o.name: o for o in self.options})
        if len(self._by_name) != len(self.options):
            raise ValueError(f"job {self.name!r} declares an option twice")
        if not self.engines or not set(self.engines) <= set(ENGINES):
            raise ValueError(f"job {self.name!r}: engines must be a non-empty subset of {ENGINES}")
        if self.default_engine not in self.engines:
            raise ValueError(f"job {self.name!r}: default_engine {self.default_engine!r} is not in {self.engines}")

    def option(self, name: str) -> Option:
        """The declaration of option ``name``.

        Raises:
            JobSpecError: the job declares no such option (a job reading an undeclared option is a bug).
        """
        try:
            return self._by_name[name]
        except KeyError:
            raise JobSpecError(
                f"Cannot run job {self.name!r}: it reads option {name!r}, which its JobDefinition does not "
                "declare"
            ) from None

    def unknown_options_message(self, names: Sequence[str]) -> str:
        """``unknown option 'x' (did you mean 'y'?), ...; its options: ...``."""
        parts = []
        aliases = {alias.lower(): o.name for o in self.options for alias in o.aliases}
        for name in names:
            close = [aliases[name.lower()]] if name.lower() in aliases else []
            close = close or difflib.get_close_matches(name, list(self._by_name), n=1, cutoff=0.6)
            parts.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        known = ", ".join(self._by_name) or "none"
        noun = "option" if len(parts) == 1 else "options"
        return f"unknown {noun} {', '.join(parts)}; its options: {known}"

    def check_engine(self, engine: str, where: str) -> Engine:
        """``engine`` if this job runs there; raises ``JobSpecError`` otherwise."""
        if engine not in self.engines:
            raise JobSpecError(
                f"{where}: job {self.name!r} cannot run on engine {engine!r} (engines: {', '.join(self.engines)})"
            )
        return engine  # type: ignore[return-value]

    def validate(
        self,
        options: Mapping[str, Any] | None,
        *,
        engine: str | None = None,
        where: str | None = None,
        partial: bool = False,
    ) -> dict[str, Any]:
        """The options converted (:meth:`Option.convert`), checked, with defaults filled in.

        An option given as None is absent (its default applies).

        Args:
            options: the job's options as given.
            engine: the engine the job will run on (checks ``spark_only`` options).
            where: the message prefix (default ``Cannot run job '<name>'``).
            partial: DAG-parse time: values that are templates or XComArgs are accepted unchecked,
                and the cross-option rules run only when no value is deferred.

        Raises:
            JobSpecError: an unknown, mistyped or missing required option, or a broken cross-option rule.
        """
        where = where or f"Cannot run job {self.name!r}"
        given = dict(options or {})
        unknown = [str(name) for name in given if name not in self._by_name]
        if unknown:
            raise JobSpecError(f"{where}: {self.unknown_options_message(unknown)}")
        values: dict[str, Any] = {}
        deferred = False
        for opt in self.options:
            value = given.get(opt.name)
            if partial and value is not None and is_deferred_value(value):
                deferred = True
                values[opt.name] = value
                continue
            value = opt.check(opt.convert(value, where), where)
            if value is None:
                if opt.required:
                    raise JobSpecError(f"{where}: option {opt.name!r} is required ({opt.doc})")
                value = opt.default
            elif opt.spark_only and engine == "local":
                raise JobSpecError(f"{where}: option {opt.name!r} needs engine 'spark' (the task runs on 'local')")
            values[opt.name] = value
        if self.check is not None and not deferred:
            try:
                self.check(values)
            except JobSpecError as err:
                raise JobSpecError(f"{where}: {err}") from None
        return values

    def markdown(self) -> str:
        """The job's options as a Markdown table (the README and the operator docs use it)."""
        engines = ", ".join(f"`{e}`" for e in self.engines)
        lines = [
            f"**`{self.name}`**: {self.summary} Engines: {engines} (default `{self.default_engine}`)"
            + ("; takes a list of tables." if self.multi_table else "."),
            "",
        ]
        if not self.options:
            return "\n".join([*lines, "No options.", ""])
        lines += ["| option | type | default | meaning |", "|---|---|---|---|"]
        for opt in self.options:
            default = "required" if opt.required else "" if opt.default is None else f"`{opt.default!r}`"
            doc = opt.doc + (" Spark only." if opt.spark_only else "")
            lines.append(f"| `{opt.name}` | {opt.describe_type()} | {default} | {doc} |")
        return "\n".join([*lines, ""])

    def docstring(self, heading: str | None = None) -> str:
        """The job's options as a docstring section (default: the arguments of the job's operator)."""
        lines = [heading or f"Arguments from the options of job ``{self.name}`` (each templated):", ""]
        for opt in self.options:
            default = ", required" if opt.required else "" if opt.default is None else f", default ``{opt.default!r}``"
            lines.append(f"- ``{opt.name}`` ({opt.describe_type()}{default}): {opt.doc}")
        return "\n".join(lines)


ISOLATION_LEVELS = ("Serializable", "WriteSerializable")


def isolation_level_option(doc: str = "") -> Option:
    """The ``isolation_level`` option of jobs that commit data or metadata (``doc`` adds a sentence)."""
    return Option(
        "isolation_level", str, None, " ".join(filter(None, ["Default: the table's `delta.isolationLevel`.", doc])),
        choices=ISOLATION_LEVELS, aliases=("isolation", "isolationLevel"),
    )
