"""One declaration per job: its options (name, type, default, doc), engines and table arity.

Each job module declares ``JOB = JobDefinition(...)`` next to its ``run`` function. That one object is
what every side reads:

- the operator validates ``job_options`` in ``__init__`` (when the DAG is parsed) and again after
  templates are rendered, with "did you mean ..." for a misspelt name;
- the job runner validates the spec's options before the job runs, and the job reads them back
  (defaults filled in) with ``ctx.option(name)``;
- the docs (operator docstrings, the README's job table, ``python -m airflow_provider_delta.jobs``)
  list the options from it.

Standard library only, and no pyspark: the Airflow layer imports these declarations at DAG parse time.

Example:
    >>> JOB = JobDefinition(
    ...     name="checkpoint",
    ...     summary="Checkpoint the newest version.",
    ...     options=(Option("cleanup_log", bool, True, "Also delete expired log files."),),
    ...     engines=("local", "spark"),
    ... )
    >>> JOB.validate({"cleanup_log": False})
    {'cleanup_log': False}
    >>> JOB.unknown_options_message(["cleanup"])
    "unknown option 'cleanup' (did you mean 'cleanup_log'?); its options: cleanup_log"
"""

from __future__ import annotations

import difflib
import importlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from airflow_provider_delta.exceptions import JobSpecError
from airflow_provider_delta.jobs import JOBS

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

Engine = Literal["spark", "local"]
ENGINES: tuple[Engine, ...] = ("spark", "local")

_MISSING: Any = object()
# Values a template or an XCom will only provide later: not checkable when the DAG is parsed.
_TEMPLATE_MARKERS = ("{{", "{%")


def _type_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(k.__name__ for k in kinds)


def is_deferred_value(value: Any) -> bool:
    """Whether ``value`` is only known at run time: a Jinja template string, or an XComArg-like object."""
    if isinstance(value, str):
        return any(marker in value for marker in _TEMPLATE_MARKERS)
    if isinstance(value, dict):
        return any(is_deferred_value(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(is_deferred_value(v) for v in value)
    return not isinstance(value, int | float | bool | type(None))


@dataclass(frozen=True)
class Option:
    """One option of a job.

    Args:
        name: the key in ``job_options`` / the spec's ``options``.
        kind: the JSON type(s) the value must have (``bool``, ``int``, ``float``, ``str``, ``list``,
            ``dict``, or a tuple of them). ``int`` refuses ``True``/``False``; ``float`` accepts ints.
        default: the value when the option is absent (``None``: no default, the job decides).
        doc: one sentence for the docs.
        choices: the allowed values, when the option is an enumeration.
        items: the type of each element of a ``list`` option.
        spark_only: the option needs engine ``spark`` (e.g. data read by Spark).
        aliases: names users may try for it (Spark's ``mergeSchema`` for ``schema_mode``): an unknown
            option with such a name gets "did you mean" this one.
    """

    name: str
    kind: type | tuple[type, ...]
    default: Any = None
    doc: str = ""
    choices: tuple[Any, ...] = ()
    items: type | None = None
    spark_only: bool = False
    aliases: tuple[str, ...] = ()

    def check(self, value: Any, where: str) -> Any:
        """``value`` if it fits this option; raises ``JobSpecError`` naming the option otherwise."""
        if value is None:
            return None
        kinds = self.kind if isinstance(self.kind, tuple) else (self.kind,)
        ok = any(_fits(value, k) for k in kinds)
        if not ok:
            hint = ""
            if isinstance(value, str) and str not in kinds:
                hint = " (a Jinja template renders to a string: give the DAG render_template_as_native_obj=True)"
            raise JobSpecError(
                f"{where}: option {self.name!r} must be {_type_name(self.kind)}, "
                f"found {value!r} ({type(value).__name__}){hint}"
            )
        if self.choices and value not in self.choices:
            raise JobSpecError(
                f"{where}: option {self.name!r} must be one of {', '.join(map(repr, self.choices))}, found {value!r}"
            )
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
            text = f"list[{self.items.__name__}]"
        if self.choices:
            text += ", one of " + ", ".join(repr(c) for c in self.choices)
        return text


def _fits(value: Any, kind: type) -> bool:
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    return isinstance(value, kind)


@dataclass(frozen=True)
class JobDefinition:
    """What a job is: its name, options, the engines it runs on, whether it takes a list of tables.

    Args:
        name: the job's name (its key in :data:`airflow_provider_delta.jobs.JOBS`).
        summary: one sentence for the docs.
        options: every option the job reads.
        engines: where it may run; the first is the default. ``"local"`` runs the job in the calling
            process (the Airflow task) without Spark: for jobs that move no data.
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
    engines: tuple[Engine, ...] = ("spark", "local")
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

    @property
    def default_engine(self) -> Engine:
        """The engine used when the task does not choose one."""
        return self.engines[0]

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
        """The options with defaults filled in, after checking names, types and cross-option rules.

        Args:
            options: the job's options as given.
            engine: the engine the job will run on (checks ``spark_only`` options).
            where: the message prefix (default ``Cannot run job '<name>'``).
            partial: DAG-parse time: values that are templates or XComArgs are accepted unchecked,
                and the cross-option rules run only when no value is deferred.

        Raises:
            JobSpecError: an unknown or mistyped option, or a broken cross-option rule.
        """
        where = where or f"Cannot run job {self.name!r}"
        given = dict(options or {})
        unknown = [str(name) for name in given if name not in self._by_name]
        if unknown:
            raise JobSpecError(f"{where}: {self.unknown_options_message(unknown)}")
        values: dict[str, Any] = {}
        deferred = False
        for opt in self.options:
            value = given.get(opt.name, _MISSING)
            if value is _MISSING:
                values[opt.name] = opt.default
                continue
            if partial and is_deferred_value(value):
                deferred = True
                values[opt.name] = value
                continue
            values[opt.name] = opt.check(value, where)
            if opt.spark_only and value is not None and engine == "local":
                raise JobSpecError(f"{where}: option {opt.name!r} needs engine 'spark' (the task runs on 'local')")
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
            default = "" if opt.default is None else f"`{opt.default!r}`"
            doc = opt.doc + (" Spark only." if opt.spark_only else "")
            lines.append(f"| `{opt.name}` | {opt.describe_type()} | {default} | {doc} |")
        return "\n".join([*lines, ""])

    def docstring(self) -> str:
        """The job's options as reStructuredText-friendly lines for an operator's docstring."""
        lines = [f"Job options of ``{self.name}`` (``job_options``):", ""]
        for opt in self.options:
            default = "" if opt.default is None else f", default ``{opt.default!r}``"
            lines.append(f"- ``{opt.name}`` ({opt.describe_type()}{default}): {opt.doc}")
        return "\n".join(lines)


def job_definition(name: str) -> JobDefinition:
    """The declaration of job ``name`` (imports its module, which imports no pyspark).

    Raises:
        JobSpecError: no such job, or its module declares no ``JOB``.
    """
    if name not in JOBS:
        raise JobSpecError(f"Cannot run job {name!r}: unknown job (known: {', '.join(sorted(JOBS))})")
    module = importlib.import_module(JOBS[name])
    definition = getattr(module, "JOB", None)
    if not isinstance(definition, JobDefinition):
        raise JobSpecError(f"Cannot run job {name!r}: module {JOBS[name]!r} declares no JOB = JobDefinition(...)")
    return definition


def all_definitions() -> list[JobDefinition]:
    """Every registered job's declaration, by name."""
    return [job_definition(name) for name in sorted(JOBS)]


def jobs_markdown() -> str:
    """Every job's options as Markdown: the README's job table (``python -m airflow_provider_delta.jobs``)."""
    return "\n".join(d.markdown() for d in all_definitions())


ISOLATION_LEVELS = ("Serializable", "WriteSerializable")


def isolation_level_option(doc: str = "") -> Option:
    """The ``isolation_level`` option of jobs that commit data or metadata (``doc`` adds a sentence)."""
    return Option(
        "isolation_level", str, None, " ".join(filter(None, ["Default: the table's `delta.isolationLevel`.", doc])),
        choices=ISOLATION_LEVELS, aliases=("isolation", "isolationLevel"),
    )
