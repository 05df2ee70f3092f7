"""The Textual app of `convrisk ui`: two tabs of records, a detail pane, a status bar, actions."""

from __future__ import annotations

import asyncio
import concurrent.futures
import shlex
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, TypeVar

from rich.text import Text
from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import DataTable, Input, Static, TabbedContent, TabPane

from convrisk.api_client.errors import NotFoundError
from convrisk.api_client.resources import CONVERSATIONS as CONVERSATION_RESOURCE
from convrisk.api_client.resources import RISK_PROFILES as RISK_PROFILE_RESOURCE
from convrisk.api_client.resources import Resource, ResourceName

from . import bodies, guard
from .cells import format_timestamp, json_text, shown
from .context import AppContext
from .errors import UsageProblem, describe
from .kinds import Kind
from .resource_kinds import KINDS

T = TypeVar("T")
Record = Mapping[str, Any]

# Rows asked for at a time (default); the next page is asked for when the cursor is this near
# the end.
PAGE = 50
NEAR_END = 10
MARK = "*"
WRITE = "convrisk-ui write"  # the name of a write's thread: a quit waits for it (cli/ui.py)
NARROW = 80

KEYS = """\
 t                 the other tab (or click a tab)
 Up / Down         move; pages load as you near the end
 space             mark / unmark the row
 m  p  a           mute, pin, archive (or undo them: un-)
 d                 delete (asks first, with the count)
 e                 edit a risk profile (type, score, details)
 r                 refresh the tab
 /                 filter: the options of `list`, or a
                   contact / customer id or an id alone
 ?                 these keys
 q  Ctrl-C         quit"""


# The characters of a value shown in a cell, and in the detail pane: a service's megabytes in one
# field would hold the screen for seconds at each render (5 MB: 9 s to the first rows).
CELL_CHARS = 500
DETAIL_CHARS = 20_000


def safe(text: str) -> Text:
    """Text from data as one literal line: control characters escaped, no markup read."""
    return Text(shown(clipped(text, CELL_CHARS)))


def clipped(text: str, most: int) -> str:
    """`text`, or its first `most` characters and how many more there are."""
    if len(text) <= most:
        return text
    return f"{text[:most]}… ({len(text) - most:,} more characters)"


async def off_thread(call: Callable[[], T], name: str = "convrisk-ui request") -> T:
    """`call()` on a daemon thread of its own, awaited: a request that hangs holds neither the
    screen nor the quit (Textual's thread workers run in the executor that exit waits for)."""
    future: concurrent.futures.Future[T] = concurrent.futures.Future()

    def target() -> None:
        try:
            result = call()
        except BaseException as exc:
            if not future.cancelled():  # nobody waits for an answer the user left behind
                future.set_exception(exc)
        else:
            if not future.cancelled():
                future.set_result(result)

    threading.Thread(target=target, name=name, daemon=True).start()
    return await asyncio.wrap_future(future)


def parse_filters(resource: Resource, text: str) -> dict[str, Any]:
    """The filters of `list` from `--muted --contact-id c_1` (a bare word: the first string
    filter's value: contact or customer id; a record's id alone: `id`, that record only); a
    UsageProblem names what is wrong."""
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise UsageProblem(f"The filter cannot be read: {exc}.") from exc
    if len(words) == 1 and words[0].startswith(resource.prefix):
        return {"id": words[0]}
    filters: dict[str, Any] = {}
    by_option = {f.option: f for f in resource.filters}
    bare = next(f for f in resource.filters if f.type == "string" and f.name != "group_id")
    position = 0
    while position < len(words):
        word = words[position]
        position += 1
        negated = word.startswith("--not-")
        option = "--" + word[len("--not-") :] if negated else word
        found = by_option.get(option)
        if not word.startswith("-"):
            filters[bare.name] = word
        elif found is None or (negated and found.type != "boolean"):
            known = ", ".join(_option_names(resource))
            raise UsageProblem(f"No such filter: {word}. The filters: {known}.")
        elif found.type == "boolean":
            filters[found.name] = not negated
        elif position >= len(words) or not words[position]:
            raise UsageProblem(f"{word} needs a value.")
        else:
            filters[found.name] = words[position]
            position += 1
    return filters


def _option_names(resource: Resource) -> list[str]:
    names = []
    for f in resource.filters:
        names.append(f"{f.option}/--not-{f.option[2:]}" if f.type == "boolean" else f.option)
    return names


def detail_text(kind: Kind, record: Record) -> Text:
    """Every field of a record, one per line: times in UTC, objects as indented JSON."""
    lines = Text()
    for column in kind.columns:
        value = record.get(column.key)
        if column.kind == "time" and value is not None:
            text = f"{format_timestamp(value)} ({value})"  # a service may send any string
            shown_value = shown(clipped(text, DETAIL_CHARS))
        elif isinstance(value, dict | list):
            text = json_text(value, indent=2)
            shown_value = "\n" + shown(clipped(text, DETAIL_CHARS), keep_newlines=True)
        else:
            shown_value = shown(clipped(column.cell(record), DETAIL_CHARS))
        lines.append(f"{column.key}: ", style="bold")
        lines.append(shown_value + "\n")
    return lines


class Shown(Static):
    """A Static that keeps the text it shows, to be read back."""

    def __init__(self, text: Text | None = None, **options: Any) -> None:
        self.shown_text = Text("") if text is None else text
        super().__init__(self.shown_text, **options)

    def show(self, text: Text) -> None:
        """Show this text instead."""
        self.shown_text = text
        self.update(text)


class Keys(ModalScreen[None]):
    """The keys, closed by any key."""

    def compose(self) -> ComposeResult:
        yield Shown(Text(KEYS), id="keys")

    def on_key(self) -> None:
        self.dismiss(None)


class Question(ModalScreen[str | None]):
    """A question with a typed answer: None when Escape closes it."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss_none", "Cancel")]

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical(id="question"):
            yield Shown(safe(self.question), id="question-text")
            yield Input(id="answer")

    def action_dismiss_none(self) -> None:
        self.dismiss(None)

    @on(Input.Submitted)
    def answered(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)


class EditForm(ModalScreen[dict[str, Any] | None]):
    """A risk profile's type, score and details, checked with `risk update`'s rules."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss_none", "Cancel")]

    def __init__(self, record: Record) -> None:
        super().__init__()
        self.record = record

    def compose(self) -> ComposeResult:
        with Vertical(id="edit"):
            yield Static(safe(f"Edit {self.record.get('id', '')} (Enter saves, Escape cancels)"))
            before = self.before()
            yield Static("profile type")
            yield Input(before["profile_type"], id="profile_type")
            yield Static("score")
            yield Input(before["score"], id="score")
            yield Static("details (a JSON object)")
            yield Input(before["details"], id="details")
            yield Shown(id="edit-problem")

    def before(self) -> dict[str, str]:
        """The fields as the form shows them at first: control characters escaped (an Input
        writes its value to the terminal as it is), so an unchanged field is not sent."""
        details = self.record.get("details")
        return {
            "profile_type": shown(str(self.record.get("profile_type") or "")),
            "score": shown(str(self.record.get("score", ""))),
            "details": json_text(details if details is not None else {}),
        }

    def action_dismiss_none(self) -> None:
        self.dismiss(None)

    @on(Input.Submitted)
    def save(self) -> None:
        """The changed fields, or the problem shown and the form kept open."""
        typed = {name: self.query_one(f"#{name}", Input).value for name in _EDITED}
        before = self.before()
        changed = {name: value for name, value in typed.items() if value != before[name]}
        try:
            changes = bodies.risk_profile_changes(
                changed.get("profile_type"), changed.get("score"), changed.get("details")
            )
        except UsageProblem as exc:
            self.query_one("#edit-problem", Shown).show(safe(exc.message))
            return
        self.dismiss(dict(changes))


_EDITED = ("profile_type", "score", "details")


class RecordsView(Vertical):
    """One resource's rows (loaded a page at a time), its filter and its detail pane."""

    def __init__(self, resource: Resource) -> None:
        super().__init__(id=f"view-{resource.name}")
        self.resource = resource
        self.kind = KINDS[resource.name]
        self.records: dict[str, dict[str, Any]] = {}
        self.marked: set[str] = set()
        self.filters: dict[str, Any] = {}
        self.after: str | None = None
        self.has_more = True
        self.fetching = False
        self.started = False
        self.generation = 0

    def compose(self) -> ComposeResult:
        yield Input(placeholder=" ".join(_option_names(self.resource)), classes="filter")
        with Horizontal():
            yield DataTable(cursor_type="row", zebra_stripes=True)
            with VerticalScroll(classes="detail"):
                yield Shown(classes="detail-text")

    def on_mount(self) -> None:
        table = self.table
        table.add_column(" ", key="mark")
        for column in self.kind.terminal_columns:
            table.add_column(column.title, key=column.key)
        self.query_one(Input).display = False

    @property
    def table(self) -> DataTable[Text]:
        return self.query_one(DataTable)

    def cells(self, record: Record) -> list[Text]:
        """A row's cells, the mark first."""
        mark = MARK if record.get("id") in self.marked else " "
        return [Text(mark), *(safe(c.cell(record)) for c in self.kind.terminal_columns)]

    def add_page(self, page: Sequence[dict[str, Any]], has_more: bool) -> None:
        """Rows for a page (an id already shown is not shown twice)."""
        table = self.table
        for record in page:
            id = str(record.get("id", ""))
            if not id or id in self.records:
                continue
            self.records[id] = record
            table.add_row(*self.cells(record), key=id)
        if page:
            self.after = str(page[-1].get("id", ""))
        self.has_more = has_more and bool(page)
        if table.row_count and not self.detail_shown:
            self.show_detail()

    @property
    def detail_shown(self) -> bool:
        return bool(self.query_one(".detail-text", Shown).shown_text)

    def clear(self) -> None:
        """No rows, no marks, from the first page again."""
        self.table.clear()
        self.records.clear()
        self.marked.clear()
        self.after = None
        self.has_more = True
        self.generation += 1  # a page asked for before is not shown
        self.query_one(".detail-text", Shown).show(Text(""))

    def current_id(self) -> str | None:
        """The id of the row under the cursor."""
        table = self.table
        if not table.row_count:
            return None
        row_key, _ = table.coordinate_to_cell_key(table.cursor_coordinate)
        return row_key.value

    def targets(self) -> list[str]:
        """The marked rows, else the row under the cursor."""
        if self.marked:
            return [id for id in self.records if id in self.marked]
        current = self.current_id()
        return [] if current is None else [current]

    def show_detail(self) -> None:
        current = self.current_id()
        record = self.records.get(current) if current is not None else None
        text = detail_text(self.kind, record) if record is not None else Text("")
        self.query_one(".detail-text", Shown).show(text)

    def replace(self, record: dict[str, Any]) -> None:
        """A row shown again with the record the service answered."""
        id = str(record.get("id", ""))
        if id not in self.records:
            return
        self.records[id] = record
        for column, cell in zip(
            ["mark", *(c.key for c in self.kind.terminal_columns)], self.cells(record), strict=True
        ):
            self.table.update_cell(id, column, cell)

    def drop(self, id: str) -> None:
        if id in self.records:
            del self.records[id]
            self.marked.discard(id)
            self.table.remove_row(id)

    def toggle_mark(self) -> None:
        current = self.current_id()
        if current is None:
            return
        if current in self.marked:
            self.marked.discard(current)
        else:
            self.marked.add(current)
        self.table.update_cell(current, "mark", Text(MARK if current in self.marked else " "))


class Browser(App[int]):
    """conversations and risk profiles, browsed; writes through the run's client."""

    TITLE = "convrisk"
    CSS = """
    RecordsView { height: 1fr; }
    RecordsView Horizontal { height: 1fr; }
    RecordsView DataTable { width: 2fr; height: 1fr; }
    RecordsView .detail { width: 1fr; min-width: 20; border-left: solid $primary; }
    .narrow RecordsView Horizontal { layout: vertical; }
    .narrow RecordsView DataTable { width: 1fr; height: 2fr; }
    .narrow RecordsView .detail { width: 1fr; height: 1fr; border-left: none;
        border-top: solid $primary; }
    #status { dock: bottom; height: auto; max-height: 3; background: $panel; }
    #keys { width: auto; height: auto; max-width: 100%; max-height: 100%; overflow-y: auto;
        border: solid $primary; background: $surface; }
    Keys, Question, EditForm { align: center middle; }
    #question, #edit { width: 80%; max-width: 70; height: auto; border: solid $primary;
        background: $surface; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit_ui", "Quit"),
        Binding("ctrl+c", "quit_ui", "Quit", priority=True, show=False),
        Binding("t", "other_tab", "Tab"),
        Binding("r", "refresh", "Refresh"),
        Binding("slash", "filter", "Filter"),
        Binding("question_mark", "keys", "Keys"),
        Binding("space", "mark", "Mark", show=False),
        Binding("m", "flip('is_muted')", "Mute", show=False),
        Binding("p", "flip('is_pinned')", "Pin", show=False),
        Binding("a", "flip('archived_at')", "Archive", show=False),
        Binding("d", "delete", "Delete", show=False),
        Binding("e", "edit", "Edit", show=False),
    ]

    def __init__(
        self,
        run: AppContext,
        *,
        page_size: int = PAGE,
        first_page: concurrent.futures.Future[Any] | None = None,
    ) -> None:
        """`first_page`: the conversations' first page, already asked for."""
        super().__init__()
        self.run_context = run
        self.page_size = page_size
        self.first_page = first_page
        self.settings = run.settings()
        self.problem = ""
        self.busy = ""
        # Kept, not queried: a query reads the screen on top, which may be a question.
        self.views: dict[str, RecordsView] = {
            r.name: RecordsView(r) for r in (CONVERSATION_RESOURCE, RISK_PROFILE_RESOURCE)
        }
        self.tabs = TabbedContent(id="tabs")
        self.status_bar = Shown(id="status")

    def compose(self) -> ComposeResult:
        with self.tabs:
            with TabPane("Conversations", id="conversations"):
                yield self.views["conversations"]
            with TabPane("Risk profiles", id="risk_profiles"):
                yield self.views["risk_profiles"]
        yield self.status_bar

    def on_mount(self) -> None:
        self.show_status()
        self.first_load(self.view())  # the other tab's rows when it is first shown
        self.view().table.focus()

    def on_resize(self) -> None:
        # Under 80 columns the detail pane goes below the table: the ids keep their width.
        self.set_class(self.size.width < NARROW, "narrow")
        self.show_status()

    @on(TabbedContent.TabActivated)
    def tab_shown(self) -> None:
        view = self.view()
        self.first_load(view)
        view.table.focus()

    def first_load(self, view: RecordsView) -> None:
        """The first page of a view, once."""
        if not view.started:
            view.started = True
            self.load(view)

    # The status bar -------------------------------------------------------------------------

    def where(self) -> str:
        """The profile, the backend and the profile's marks, as one line."""
        settings = self.settings
        if settings.base_url is not None:
            from convrisk.api_client.endpoint import shown_url

            backend = shown_url(settings.base_url)
        else:
            backend = f"db {settings.db}"
        marks = [name for name in ("protected", "read_only") if getattr(settings, name)]
        mark = f" [{', '.join(marks).replace('_', '-')}]" if marks else ""
        return f"profile {settings.profile}{mark} · {backend} · ? keys · q quit"

    def show_status(self) -> None:
        # One line, cut to the width here (Textual wraps a Text's lines whatever its no_wrap): a
        # wrapped first line pushed the problem line out of the bar on a narrow terminal.
        text = Text(shown(self.where()))
        text.truncate(max(self.size.width, 1), overflow="ellipsis")
        loading = [view.kind.plural for view in self.views.values() if view.fetching]
        busy = self.busy or (f"Loading {', '.join(loading)}… (q quits)" if loading else "")
        second = self.problem or busy
        if second:
            text.append("\n")
            style = "bold red" if self.problem else "italic"
            text.append(shown(second), style=style)
        self.status_bar.show(text)

    def say(self, problem: str = "", *, busy: str | None = None) -> None:
        """The last error (or a notice) as the status bar's second line."""
        self.problem = problem
        if busy is not None:
            self.busy = busy
        self.show_status()

    def error_line(self, exc: BaseException) -> str:
        """The command line's message for an error."""
        remote = self.settings.is_remote
        return describe(exc, remote=remote, settings=self.run_context.settings).line()

    # Loading --------------------------------------------------------------------------------

    def view(self) -> RecordsView:
        """The view of the tab on screen."""
        return self.views.get(self.tabs.active) or self.views["conversations"]

    @work(group="load")
    async def load(self, view: RecordsView) -> None:
        """The next page of a view, off the screen's thread."""
        if view.fetching or not view.has_more:
            return
        view.fetching = True
        name: ResourceName = view.resource.name
        filters, after, generation = dict(view.filters), view.after, view.generation
        self.show_status()
        try:
            first, self.first_page = self.first_page, None
            if first is not None and name == "conversations" and not filters and after is None:
                page = await asyncio.wrap_future(first)
            elif "id" in filters:
                record = getattr(self.run_context.client(), name).retrieve
                page = {"data": [await off_thread(lambda: record(filters["id"]))]}
            else:
                resource = getattr(self.run_context.client(), name)
                size = self.page_size
                page = await off_thread(
                    lambda: resource.list(filters or None, limit=size, starting_after=after)
                )
        except Exception as exc:
            view.fetching = False
            if view.generation != generation:
                self.load(view)  # a refresh or a new filter came meanwhile: its rows instead
                return
            view.has_more = False  # `r` tries again
            self.say(self.error_line(exc))
            return
        view.fetching = False
        if view.generation != generation:
            self.load(view)
            return
        rows, more = page["data"], bool(page.get("has_more"))
        if len(rows) > self.page_size:  # a service that ignored the limit: the rest when asked
            rows, more = rows[: self.page_size], True
        view.add_page(rows, more)
        self.show_status()

    @on(DataTable.RowHighlighted)
    def highlighted(self, event: DataTable.RowHighlighted) -> None:
        for view in self.views.values():
            if view.table is event.data_table:
                view.show_detail()
                if event.cursor_row >= view.table.row_count - NEAR_END:
                    self.load(view)

    def action_refresh(self) -> None:
        view = self.view()
        view.clear()
        self.say("")
        self.load(view)

    def action_filter(self) -> None:
        field = self.view().query_one(Input)
        field.display = True
        field.focus()

    @on(Input.Submitted, ".filter")
    def filter_given(self, event: Input.Submitted) -> None:
        view = self.view()
        try:
            filters = parse_filters(view.resource, event.value)
        except UsageProblem as exc:
            self.say(exc.message)
            return
        view.clear()
        view.filters = filters
        event.input.display = bool(event.value.strip())
        view.table.focus()
        self.say("")
        self.load(view)

    def on_key(self, event: Any) -> None:
        if event.key == "escape" and isinstance(self.focused, Input):
            self.focused.display = bool(self.focused.value.strip())
            self.view().table.focus()

    def action_other_tab(self) -> None:
        self.tabs.active = (
            "risk_profiles" if self.tabs.active == "conversations" else "conversations"
        )

    def action_keys(self) -> None:
        self.push_screen(Keys())

    def action_quit_ui(self) -> None:
        self.exit(0)

    # Actions --------------------------------------------------------------------------------

    def action_mark(self) -> None:
        self.view().toggle_mark()

    def allowed(self, what: str) -> bool:
        """False (and the status bar says why) when the profile is read-only."""
        try:
            guard.refuse_read_only(self.run_context, what)
        except UsageProblem as exc:
            self.say(exc.message)
            return False
        return True

    def action_flip(self, field: str) -> None:
        view = self.view()
        if view.resource.name != "conversations":
            self.say(f"{_VERB[field][0].capitalize()} is for conversations.")
            return
        ids = view.targets()
        if not ids or not self.allowed(f"update {view.kind.plural}"):
            return
        # Every target already muted (pinned, archived): undo it; else do it.
        done = all(_is_set(view.records[id], field) for id in ids)
        changes: dict[str, Any] = {field: not done}
        if field == "archived_at":
            changes = {field: None if done else _now()}
        verb = _VERB[field][1 if done else 0]
        self.confirmed(
            view, ids, f"update {view.kind.plural}", lambda: self.update(view, ids, changes, verb)
        )

    def action_delete(self) -> None:
        view = self.view()
        ids = view.targets()
        what = f"delete {view.kind.plural}"
        if not ids or not self.allowed(what):
            return
        if guard.is_protected(self.run_context):
            self.confirmed(view, ids, what, lambda: self.delete(view, ids))
            return
        count = _records(len(ids))

        def answered(answer: str | None) -> None:
            if answer is not None and answer.strip().lower() in ("y", "yes"):
                self.delete(view, ids)
            else:
                self.say("Not deleted.")

        self.push_screen(Question(f"Delete {count} for good? (y/N)"), answered)

    def action_edit(self) -> None:
        view = self.view()
        if view.resource.name != "risk_profiles":
            self.say("Edit is for risk profiles.")
            return
        current = view.current_id()
        what = f"update {view.kind.plural}"
        if current is None or not self.allowed(what):
            return
        record = view.records[current]

        def saved(changes: dict[str, Any] | None) -> None:
            if changes:
                self.confirmed(
                    view, [current], what, lambda: self.update(view, [current], changes, "Edited")
                )

        self.push_screen(EditForm(record), saved)

    def confirmed(
        self, view: RecordsView, ids: list[str], what: str, go: Callable[[], object]
    ) -> None:
        """`go()` at once, or on a protected profile once the count is typed back."""
        if not guard.is_protected(self.run_context):
            go()
            return
        number = len(ids)

        def answered(answer: str | None) -> None:
            if answer is not None and guard.same_count(answer, number):
                go()
            else:
                said = "no answer" if not answer else f"the answer was not {number}"
                self.say(f"Aborted ({said}): nothing was sent.")

        profile = self.settings.profile
        self.push_screen(
            Question(
                f"Protected profile {profile!r}: {what}: {_records(number)}. "
                f"Type the number of records ({number}) to {what}:"
            ),
            answered,
        )

    @work(group="write", exclusive=False)
    async def update(
        self, view: RecordsView, ids: list[str], changes: dict[str, Any], verb: str
    ) -> None:
        """Each id updated through the client (journaled), its row shown again."""
        name: ResourceName = view.resource.name
        target = getattr(self.run_context.client(), name)
        done, failed = await self.each(
            ids, lambda id: target.update(id, changes), view.replace, view.drop
        )
        self.report(verb, view, done, failed)

    @work(group="write", exclusive=False)
    async def delete(self, view: RecordsView, ids: list[str]) -> None:
        """Each id deleted through the client (journaled), its row removed."""
        name: ResourceName = view.resource.name
        target = getattr(self.run_context.client(), name)
        done, failed = await self.each(ids, target.delete, lambda answer: None, view.drop)
        for id in done:
            view.drop(id)
        view.show_detail()
        self.report("Deleted", view, done, failed)

    async def each(
        self,
        ids: list[str],
        call: Callable[[str], dict[str, Any]],
        show: Callable[[dict[str, Any]], None],
        gone: Callable[[str], None],
    ) -> tuple[list[str], list[str]]:
        """`call` on each id in turn: the ids done, and the error lines of the others (a record
        the service no longer has is `gone`: its row is not left to fail again)."""
        done: list[str] = []
        failed: list[str] = []
        for number, id in enumerate(ids, 1):
            self.say(self.problem, busy=f"Writing {number} of {len(ids)}…")
            try:
                answer = await off_thread(lambda id=id: call(id), WRITE)  # type: ignore[misc]
            except Exception as exc:
                failed.append(f"{id}: {self.error_line(exc)}")
                if isinstance(exc, NotFoundError):
                    gone(id)
                continue
            done.append(id)
            show(answer)
        self.busy = ""
        return done, failed

    def report(self, verb: str, view: RecordsView, done: list[str], failed: list[str]) -> None:
        """The marks of the rows done taken off; the status bar says what was done."""
        kind = view.kind
        view.marked.difference_update(done)
        for id in done:
            if id in view.records:
                view.table.update_cell(id, "mark", Text(" "))
        view.show_detail()
        noun = kind.noun if len(done) == 1 else kind.plural
        line = f"{verb.capitalize()} {len(done)} {noun}."
        if failed:
            line += f" {len(failed)} failed: {failed[0]}"
        self.say(line, busy="")


_VERB = {
    "is_muted": ("muted", "unmuted"),
    "is_pinned": ("pinned", "unpinned"),
    "archived_at": ("archived", "unarchived"),
}


def _is_set(record: Record, field: str) -> bool:
    value = record.get(field)
    return value is not None and value is not False


def _now() -> int:
    import time

    return int(time.time())


def _records(number: int) -> str:
    return f"{number:,} record" if number == 1 else f"{number:,} records"
