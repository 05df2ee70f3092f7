"""The options of `conv` and `risk` made from the resources' description: the list filters, and
the create and update options of each settable field, as parameters of a Typer command."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Annotated, Any, TypeVar, cast

import typer

from convrisk.api_client.resources import Field, Filter, Resource
from convrisk.cli.options import complete
from convrisk.cli.options.bodies import clear_key, update_fields, verb_key
from convrisk.cli.options.times import TIME_HELP
from convrisk.cli.options.values import nonempty

Command = TypeVar("Command", bound=Callable[..., Any])
Parameter = inspect.Parameter
Options = list[Parameter]
_KEYWORD = inspect.Parameter.KEYWORD_ONLY


def with_options(options: Options, after: str) -> Callable[[Command], Command]:
    """Give a command that takes `**given` these options after its parameter `after`: Typer
    reads the command's signature, and passes their values in `given`."""

    def add(command: Command) -> Command:
        own = [
            parameter.replace(kind=_KEYWORD)
            for parameter in inspect.signature(command, eval_str=True).parameters.values()
            if parameter.kind is not inspect.Parameter.VAR_KEYWORD
        ]
        at = next(n for n, parameter in enumerate(own) if parameter.name == after) + 1
        cast(Any, command).__signature__ = inspect.Signature([*own[:at], *options, *own[at:]])
        return command

    return add


def _option(name: str, annotation: Any, default: Any = inspect.Parameter.empty) -> Parameter:
    return Parameter(name, _KEYWORD, annotation=annotation, default=default)


def _known(field: Field) -> complete.Completer | None:
    """Completion of the values the interface names (`--profile-type <TAB>`)."""
    if not field.known:
        return None
    return complete.one_of(lambda: field.known)


def _help(field: Field) -> str:
    """The help of `--F V`: a TIME's says which forms it takes, and what it goes without."""
    if field.type != "timestamp":
        return field.option_help
    words = f"{field.option_help}: {TIME_HELP}"
    return words if field.verbs is None else words + " Not with --{} or --{}.".format(*field.verbs)


def _value_option(field: Field, required: bool = False) -> Parameter:
    option = typer.Option(
        field.option, metavar=field.value_name, help=_help(field), autocompletion=_known(field)
    )
    if required:
        return _option(field.name, Annotated[str, option])
    return _option(field.name, Annotated[str | None, option], None)


def _filter_option(resource: Resource, described: Filter) -> Parameter:
    if described.type == "boolean":
        pair = f"{described.option}/--not-{described.option[2:]}"
        return _option(
            described.name, Annotated[bool | None, typer.Option(pair, help=described.doc)], None
        )
    field = resource.field(described.column)
    # A filter the service lacks completes from the local database (`--contact-id <TAB>`).
    local = None if described.interface else complete.filter_values(resource.name, field.name)
    option = typer.Option(
        described.option,
        metavar=field.value_name,
        help=described.doc or field.option_help,
        autocompletion=_known(field) or local,
    )
    return _option(described.name, Annotated[str | None, option], None)


def filter_options(resource: Resource) -> Options:
    """The list filters: `--muted/--not-muted` of a boolean one, `--group-id G` of a string."""
    return [_filter_option(resource, described) for described in resource.filters]


def filters(resource: Resource, given: Mapping[str, Any]) -> dict[str, Any]:
    """The filters of a list from its options (an empty string, which matches nothing, is
    refused)."""
    return {
        f.name: given.get(f.name) if f.type == "boolean" else nonempty(given.get(f.name), f.option)
        for f in resource.filters
    }


def create_options(resource: Resource) -> Options:
    """An option for each field a create takes; a required one without a default is required."""
    return [
        _value_option(field, required=field.required and field.client_default is None)
        for field in resource.creatable()
    ]


def update_options(resource: Resource) -> Options:
    """The options of each field an update takes: a pair of verbs (`--mute/--unmute`), `--F V`
    (a TIME for a timestamp) and `--clear-...`, as the field has them."""
    options = []
    for field in update_fields(resource):
        if field.verbs is not None:
            pair = typer.Option("--{}/--{}".format(*field.verbs), help=field.verbs_help)
            options.append(_option(verb_key(field), Annotated[bool | None, pair], None))
        if field.type != "boolean":
            options.append(_value_option(field))
        if field.clear:
            clear = typer.Option(f"--{field.clear}", help=field.clear_help)
            options.append(_option(clear_key(field), Annotated[bool, clear], False))
    return options
