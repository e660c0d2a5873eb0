"""An operator's arguments are its job's declared options: template fields, signature and docs from ``JOB``.

A class statement that names a job, ``class DeltaVacuumOperator(DeltaSparkJobOperator, job="vacuum")``,
calls :func:`declare_job_arguments` (from ``DeltaSparkJobOperator.__init_subclass__``), which reads the
job's :class:`~airflow_provider_delta.jobs.definition.JobDefinition` once and gives the class:

- one keyword argument per option (its default the declared default; a ``required`` option has
  none), in the ``__init__`` signature that Airflow reads for ``default_args``, ``partial()`` and
  ``expand()``; the class's own ``__init__`` (if any) keeps its parameters in front;
- one template field per option, holding the value as given (Airflow renders it in place and the
  Rendered Template view shows each one), with a renderer for lists, dicts and SQL;
- ``job_options``: the options the task holds, read from those fields (rendered, once ``execute``
  runs); the declaration converts and checks them, at DAG parse and after rendering
  (:meth:`JobDefinition.validate`, which converts rendered strings in one place, ``Option.convert``);
- the options listed in the class docstring.

Nothing else is written per option: adding one to the declaration adds the argument everywhere.
This module imports no pyspark.
"""

from __future__ import annotations

import functools
import inspect
import textwrap
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseOperator

from airflow_provider_delta.exceptions import JobSpecError

if TYPE_CHECKING:
    from collections.abc import Callable

    from airflow_provider_delta.jobs.definition import JobDefinition, Option


def attribute_name(option: str) -> str:
    """The operator attribute (and template field) holding option ``option``.

    The option's own name, unless ``BaseOperator`` already has that name (``dry_run`` is a method
    Airflow calls): then the name with a trailing underscore (``dry_run_``).

    Example:
        >>> attribute_name("retention_hours"), attribute_name("dry_run")
        ('retention_hours', 'dry_run_')
    """
    return f"{option}_" if hasattr(BaseOperator, option) else option


def _annotation(option: Option) -> str:
    kinds = option.kind if isinstance(option.kind, tuple) else (option.kind,)
    names = [f"list[{option.items.__name__}]" if k is list and option.items else k.__name__ for k in kinds]
    if option.default is None and not option.required:
        names.append("None")
    return " | ".join(names)


def option_parameters(definition: JobDefinition) -> list[inspect.Parameter]:
    """One keyword-only parameter per option: the declared default (none when required), the declared type."""
    return [
        inspect.Parameter(
            opt.name, inspect.Parameter.KEYWORD_ONLY,
            default=inspect.Parameter.empty if opt.required else opt.default, annotation=_annotation(opt),
        )
        for opt in definition.options
    ]


def job_signature(init: Callable[..., Any], definition: JobDefinition) -> inspect.Signature:
    """``init``'s own keyword parameters, ``table`` (and ``tables``), every option, then ``**kwargs``."""
    own = [p for p in inspect.signature(init).parameters.values() if p.kind is inspect.Parameter.KEYWORD_ONLY]
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD), *own]
    tables = ["table", "tables"] if definition.multi_table else ["table"]
    for name in tables:
        params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None,
                                        annotation="str | None" if name == "table" else "list[str] | str | None"))
    taken = {p.name for p in params}
    params += [p for p in option_parameters(definition) if p.name not in taken]
    params.append(inspect.Parameter("kwargs", inspect.Parameter.VAR_KEYWORD, annotation="Any"))
    return inspect.Signature(params)


def declare_job_arguments(cls: type[Any], definition: JobDefinition, base_fields: tuple[str, ...]) -> None:
    """Give ``cls`` the job's options as arguments, template fields, ``job_options`` and docs (see above).

    Called while the class is created, before Airflow's metaclass wraps ``__init__`` (so the wrapper
    reads the signature built here). ``base_fields`` are the template fields every job operator has.
    """
    own_init: Any = cls.__dict__.get("__init__")
    if own_init is None:

        def __init__(self: Any, **kwargs: Any) -> None:
            super(cls, self).__init__(**kwargs)

        __init__.__qualname__ = f"{cls.__qualname__}.__init__"
        cls.__init__ = own_init = __init__
    own_init.__signature__ = job_signature(own_init, definition)
    cls.job_definition = definition
    fields = tuple(attribute_name(o.name) for o in definition.options)
    cls.template_fields = (*(f for f in base_fields if f not in fields), *fields)
    renderers = {**getattr(cls, "template_fields_renderers", {}),
                 **{attribute_name(o.name): o.template_renderer for o in definition.options if o.template_renderer}}
    cls.template_fields_renderers = {k: v for k, v in renderers.items() if k in cls.template_fields}
    cls.job_options = property(_job_options, doc="The job's options this task holds (None values left out).")
    doc = textwrap.indent(definition.docstring(), "    ")
    cls.__doc__ = "\n\n".join([(cls.__doc__ or "").rstrip(), doc]) + "\n"


def _job_options(self: Any) -> dict[str, Any]:
    definition: JobDefinition = type(self).job_definition
    values = {o.name: getattr(self, attribute_name(o.name), None) for o in definition.options}
    return {name: value for name, value in values.items() if value is not None}


def pop_job_arguments(definition: JobDefinition, kwargs: dict[str, Any]) -> dict[str, Any]:
    """Take the job's options out of ``kwargs``: attribute name -> value as given (default when absent).

    Raises:
        JobSpecError: an argument left in ``kwargs`` is neither an option nor ``BaseOperator``'s:
            "did you mean" the option it resembles (instead of Airflow's "Invalid arguments").
    """
    arguments = {attribute_name(o.name): kwargs.pop(o.name, o.default) for o in definition.options}
    unknown = [name for name in kwargs if name not in _base_operator_arguments()]
    if unknown:
        where = f"Cannot create task {kwargs.get('task_id')!r} (job {definition.name!r})"
        raise JobSpecError(f"{where}: {definition.unknown_options_message(unknown)}")
    return arguments


@functools.cache
def _base_operator_arguments() -> frozenset[str]:
    return frozenset(inspect.signature(BaseOperator.__init__).parameters)
