"""The one description of each resource: its path, ids, fields, filters, body rules and columns.

Everything else that knows a resource's shape is derived from `CONVERSATIONS` and
`RISK_PROFILES`: the input rules of both sides (api_client.params), the routes and the OpenAPI
document of `convrisk serve` (local_backend.sandbox.wire, local_backend.sandbox.openapi), the local
tables
(local_backend.store.table_spec), the CLI's columns, `--fields` names, import columns and completion
(cli.output.resource_kinds, cli.importing.run, cli.options.complete), the command line's filter,
create and update options and their bodies (cli.options.described, cli.options.bodies) and the
client's URL paths (api_client.remote.http).
The static view of the same fields, for type checkers, is generated from it: the TypedDicts of
api_client/record_types.py (`python -m tests.record_types --write`; tests/test_record_types.py
holds them to the description).

Plain frozen dataclasses, as the CLI reads this module while it starts (1.3 ms here, where
pydantic models would cost tens); compared by identity (`eq=False` saves a fifth of that): each
description exists once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

ResourceName = Literal["conversations", "risk_profiles"]
FieldType = Literal["string", "boolean", "number", "timestamp", "object"]
# Every id is a resource's prefix and this many characters of this alphabet
# (local_backend.store.ids:
# Crockford base32 in ASCII order, so that ids compare as strings as they do as numbers).
ID_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
ID_BODY_LENGTH = 26
# What the alphabet leaves out, for messages.
ID_ALPHABET_WORDS = "0-9 and A-Z without I, L, O or U"
# A remote service's ids may have a form of their own (the interface shows none): any length up
# to this, of the characters a URL path segment carries unescaped (RFC 3986 "unreserved").
MAX_ID_LENGTH = 255
REMOTE_ID_CHARACTERS = frozenset(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
)
API_PREFIX = "/v1"


@dataclass(frozen=True, eq=False)
class Field:
    """One field of a record: its JSON type, and who may set it.

    A field neither `create` nor `update` is read-only: the service sets it. A `fixed` field is
    set by a create and refused by name in an update. `title` heads its table column (default:
    the name in capitals); `doc` describes it in the OpenAPI document; `null_means` finishes the
    message refusing a bad value of a nullable string ("..., or null to <null_means>.");
    `client_default` is what the CLI sends for it when a create leaves it out.

    The command line's options of a settable field (cli.options.described): `--F V` with
    `option_help` and `metavar` (default: a time's TIME, else the name's first letter in
    capitals); a boolean's pair of `verbs` (`--mute/--unmute`, helped by `verbs_help`) instead;
    a timestamp's `verbs` too, meaning now and null; `clear` names a nullable field's option
    that sets null (`--clear-pinned-message`, helped by `clear_help`).
    """

    name: str
    type: FieldType
    nullable: bool = False
    create: bool = False
    required: bool = False
    update: bool = False
    fixed: bool = False
    title: str = ""
    doc: str = ""
    null_means: str = "clear it"
    client_default: Any = None
    # The values the interface names (others may be accepted): shell completion offers them.
    known: tuple[str, ...] = ()
    option_help: str = ""
    metavar: str = ""
    verbs: tuple[str, str] | None = None
    verbs_help: str = ""
    clear: str = ""
    clear_help: str = ""
    # The ui's toggle of the field: the key that flips it (what it does, in the keys' help and
    # the binding, is its first verb: "mute"), and what the status line says after a flip and
    # after its undoing (`done`: "muted", "unmuted"). A boolean flips to its opposite, a time to
    # now or to null.
    key: str = ""
    done: tuple[str, ...] = ()
    # The word of the FLAGS column when the field is set (a boolean true, a time not null, a
    # string not empty); `{}` in it is the value. Words with a value come after the plain ones.
    flag: str = ""

    @property
    def option(self) -> str:
        """The command-line option setting it: `--archived-at`."""
        return "--" + self.name.replace("_", "-")

    @property
    def value_name(self) -> str:
        """The metavar of its option: `--archived-at TIME`, `--contact-id C`."""
        if self.metavar:
            return self.metavar
        return "TIME" if self.type == "timestamp" else self.name[0].upper()

    @property
    def verb(self) -> str:
        """What setting it is called (the first of its verbs): `mute`; empty without verbs."""
        return "" if self.verbs is None else self.verbs[0]

    @property
    def has_default(self) -> bool:
        """Whether a record may be stored without it: a boolean (false) or a nullable field."""
        return self.type == "boolean" or self.nullable

    @property
    def default(self) -> Any:
        """What a record stored without it holds (has_default): false for a boolean, else null.

        A field added to a resource takes it in the rows and snapshots made before it existed.
        """
        return False if self.type == "boolean" else None

    @property
    def heading(self) -> str:
        """The title of its table column."""
        return self.title or self.name.upper().replace("_", " ")


@dataclass(frozen=True, eq=False)
class Filter:
    """One list filter: the query parameter, its type and the column it compares.

    An `interface` filter is a query parameter of the service's interface; another one (False)
    is convrisk's own: the local backend queries it, `serve` does not take it (a real service
    has no such parameter), and the remote client scans the pages for it. `option` and `doc`
    make the command line's option and its help (`--contact-id C`: the contact's...): a
    boolean's `--muted/--not-muted`; a string's metavar is its column's field's, and so is its
    help when it has no `doc`.
    """

    name: str
    type: Literal["boolean", "string"]
    column: str
    interface: bool = True
    doc: str = ""

    @property
    def option(self) -> str:
        """The command-line option: `--contact-id`."""
        return "--" + self.name.replace("_", "-")


@dataclass(frozen=True, eq=False)
class Resource:
    """One resource of the interface, described once."""

    name: ResourceName
    noun: str
    path: str
    prefix: str
    doc: str
    fields: tuple[Field, ...]
    filters: tuple[Filter, ...]
    # Create fields of which a create takes exactly one (an empty string counts as absent).
    one_of: tuple[str, ...] = ()
    # What the OpenAPI document says of an update body.
    update_doc: str = ""
    # The columns of a table on a terminal: fields, or views the CLI makes of a row.
    table: tuple[str, ...] = ()
    # When the terminal is too narrow, in this order: show a time as its date, or drop a column.
    narrowing: tuple[tuple[Literal["date", "drop"], str], ...] = ()
    # The order of the ui's toggle keys (the fields' `key`) in its keys' help and bindings; a
    # key not named here comes after those named, in the order of the fields.
    key_order: tuple[str, ...] = ()

    @property
    def plural(self) -> str:
        """The noun for several records."""
        return f"{self.noun}s"

    @property
    def segment(self) -> str:
        """The last part of the path: `risk-profiles`."""
        return self.path.rsplit("/", 1)[-1]

    @property
    def id_pattern(self) -> str:
        """The regular expression of an id this tool mints: `^conv_[0123...XYZ]{26}$`."""
        return f"^{self.prefix}[{ID_ALPHABET}]{{{ID_BODY_LENGTH}}}$"

    def is_minted_id(self, text: str) -> bool:
        """Whether `text` has the shape of an id this tool mints for this resource."""
        body = text[len(self.prefix) :]
        return (
            text.startswith(self.prefix)
            and len(body) == ID_BODY_LENGTH
            and _ID_DIGITS.issuperset(body)
        )

    def interface_filters(self) -> tuple[Filter, ...]:
        """The filters the service's interface has (query parameters of its list)."""
        return tuple(f for f in self.filters if f.interface)

    @property
    def model(self) -> str:
        """The record's schema name in the OpenAPI document: `RiskProfile`."""
        return "".join(word.capitalize() for word in self.noun.split())

    def names(self) -> tuple[str, ...]:
        """Every field of a record, in the record's order."""
        return tuple(field.name for field in self.fields)

    def creatable(self) -> tuple[Field, ...]:
        """The fields a create takes."""
        return tuple(field for field in self.fields if field.create)

    def updatable(self) -> tuple[Field, ...]:
        """The fields an update takes."""
        return tuple(field for field in self.fields if field.update)

    def writable(self) -> tuple[Field, ...]:
        """The fields a create or an update takes: with `id`, the columns of an import."""
        return tuple(field for field in self.fields if field.create or field.update)

    def field(self, name: str) -> Field:
        """The field with this name (KeyError when there is none)."""
        for field in self.fields:
            if field.name == name:
                return field
        raise KeyError(name)


_ID_DIGITS = frozenset(ID_ALPHABET)

CONVERSATIONS = Resource(
    name="conversations",
    noun="conversation",
    path=f"{API_PREFIX}/conversations",
    prefix="conv_",
    doc="A conversation with one contact or one group.",
    fields=(
        Field("id", "string", title="ID"),
        Field(
            "contact_id",
            "string",
            nullable=True,
            create=True,
            title="CONTACT",
            option_help="The contact's id.",
        ),
        Field(
            "group_id",
            "string",
            nullable=True,
            create=True,
            title="GROUP",
            option_help="A group's id.",
        ),
        Field(
            "pinned_message_id",
            "string",
            nullable=True,
            update=True,
            title="PINNED MESSAGE",
            doc="null unpins the message.",
            null_means="unpin the message",
            option_help="Pin this message.",
            metavar="M",
            clear="clear-pinned-message",
            clear_help="Unpin the pinned message.",
            flag="message {}",
        ),
        Field(
            "is_pinned",
            "boolean",
            update=True,
            title="PINNED",
            verbs=("pin", "unpin"),
            verbs_help="Pin or unpin.",
            key="p",
            done=("pinned", "unpinned"),
            flag="pinned",
        ),
        Field(
            "is_muted",
            "boolean",
            update=True,
            title="MUTED",
            verbs=("mute", "unmute"),
            verbs_help="Mute or unmute.",
            key="m",
            done=("muted", "unmuted"),
            flag="muted",
        ),
        Field("last_active_at", "timestamp", nullable=True, title="LAST ACTIVE"),
        Field("last_opened_at", "timestamp", nullable=True, title="LAST OPENED"),
        Field("created_at", "timestamp", title="CREATED"),
        Field(
            "archived_at",
            "timestamp",
            nullable=True,
            update=True,
            title="ARCHIVED",
            doc="null unarchives.",
            option_help="Archive at TIME",
            verbs=("archive", "unarchive"),
            verbs_help="Archive now, or unarchive.",
            key="a",
            done=("archived", "unarchived"),
            flag="archived",
        ),
    ),
    filters=(
        Filter("muted", "boolean", "is_muted", doc="Only muted / not muted."),
        Filter("archived", "boolean", "is_archived", doc="Only archived / not."),
        Filter("pinned", "boolean", "is_pinned", doc="Only pinned / not pinned."),
        Filter("group_id", "string", "group_id"),
        Filter(
            "contact_id",
            "string",
            "contact_id",
            interface=False,
            doc="A contact's conversations (a remote service has no such filter: every "
            "conversation is read and the contact's kept).",
        ),
    ),
    one_of=("contact_id", "group_id"),
    update_doc="Only the attributes given change; an empty object changes nothing.",
    table=("id", "with", "flags", "last_active_at", "created_at"),
    narrowing=(
        ("date", "created_at"),
        ("date", "last_active_at"),
        ("drop", "created_at"),
        ("drop", "last_active_at"),
        ("drop", "flags"),
    ),
    key_order=("m", "p", "a"),
)

_PROFILE_TYPES = ("conservative", "moderate", "aggressive")

RISK_PROFILES = Resource(
    name="risk_profiles",
    noun="risk profile",
    path=f"{API_PREFIX}/risk-profiles",
    prefix="rp_",
    doc="The risk tolerance of one customer.",
    fields=(
        Field("id", "string", title="ID"),
        Field(
            "customer_id",
            "string",
            create=True,
            required=True,
            fixed=True,
            title="CUSTOMER",
            option_help="The customer's id.",
        ),
        Field(
            "profile_type",
            "string",
            create=True,
            required=True,
            update=True,
            title="TYPE",
            doc=f"Any type; {', '.join(_PROFILE_TYPES[:-1])} and {_PROFILE_TYPES[-1]} are the "
            "known ones.",
            known=_PROFILE_TYPES,
            option_help=f"{', '.join(_PROFILE_TYPES)}, or another type.",
            metavar="T",
        ),
        Field(
            "score",
            "number",
            create=True,
            required=True,
            update=True,
            option_help="A finite number, e.g. 72 or 72.5.",
            metavar="X",
        ),
        Field(
            "details",
            "object",
            create=True,
            required=True,
            update=True,
            client_default={},
            option_help="A JSON object, @file.json, or - to read it from stdin.",
            metavar="JSON|@FILE|-",
        ),
        Field("created_at", "timestamp", title="CREATED"),
        Field("updated_at", "timestamp", title="UPDATED"),
    ),
    filters=(
        Filter("customer_id", "string", "customer_id", doc="Only this customer's."),
        Filter("profile_type", "string", "profile_type"),
    ),
    update_doc="customer_id cannot be changed; details are replaced whole.",
    table=("id", "customer_id", "profile_type", "score", "details", "updated_at"),
    narrowing=(
        ("date", "updated_at"),
        ("drop", "details"),
        ("drop", "updated_at"),
        ("drop", "profile_type"),
        ("drop", "score"),
    ),
)

RESOURCES: dict[ResourceName, Resource] = {
    CONVERSATIONS.name: CONVERSATIONS,
    RISK_PROFILES.name: RISK_PROFILES,
}
