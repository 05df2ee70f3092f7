"""The Textual app of `convrisk ui`: two tabs of records, a detail pane, a status bar, actions."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Iterable
from typing import Any, ClassVar, TypeVar

from rich.text import Text
from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Input, Static, TabbedContent, TabPane

from convrisk.api_client.errors import NotFoundError
from convrisk.api_client.resources import CONVERSATIONS as CONVERSATION_RESOURCE
from convrisk.api_client.resources import RESOURCES, Field, Resource, ResourceName
from convrisk.api_client.resources import RISK_PROFILES as RISK_PROFILE_RESOURCE
from convrisk.cli import guard
from convrisk.cli.context import AppContext
from convrisk.cli.errors import UsageProblem, describe
from convrisk.cli.options import bodies
from convrisk.cli.output.cells import json_text, shown
from convrisk.cli.ui.rows import NEAR_END, PAGE, Record, RecordsView, Shown, parse_filters, safe

T = TypeVar("T")

# Under this many columns the detail pane goes below the table.
WRITE = (
    "convrisk-ui write"  # the name of a write's thread: a quit waits for it (cli/commands/ui.py)
)
NARROW = 80


Toggles = dict[str, tuple[Resource, Field]]


def toggles(resources: Iterable[Resource]) -> Toggles:
    """The fields the ui flips with a key (the description's `key`), by name, with their
    resource: in each resource's `key_order`."""
    found: Toggles = {}
    for resource in resources:
        keyed = [field for field in resource.fields if field.key]
        order = resource.key_order
        keyed.sort(key=lambda f: order.index(f.key) if f.key in order else len(order))
        found.update((field.name, (resource, field)) for field in keyed)
    return found


def toggle_bindings(flips: Toggles) -> list[Binding]:
    """A key binding per toggle: its key runs `flip` on its field."""
    return [
        Binding(field.key, f"flip({name!r})", field.verb.capitalize(), show=False)
        for name, (_, field) in flips.items()
    ]


def keys_help(flips: Toggles) -> str:
    """The keys, as `?` shows them."""
    keyed = [field for _, field in flips.values()]
    keys = "  ".join(field.key for field in keyed)
    verbs = ", ".join(field.verb for field in keyed)
    return f"""\
 t                 the other tab (or click a tab)
 Up / Down         move; pages load as you near the end
 space             mark / unmark the row
 {keys:<17} {verbs} (or undo them: un-)
 d                 delete (asks first, with the count)
 e                 edit a risk profile (type, score, details)
 r                 refresh the tab
 /                 filter: the options of `list`, or a
                   contact / customer id or an id alone
 ?                 these keys
 q  Ctrl-C         quit"""


TOGGLES = toggles(RESOURCES.values())
KEYS = keys_help(TOGGLES)


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
            problem = self.query_one("#edit-problem", Shown)
            problem.show(safe(exc.message))
            problem.scroll_visible(animate=False)  # below the fields on a short terminal
            return
        self.dismiss(dict(changes))


_EDITED = ("profile_type", "score", "details")


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
        background: $surface; max-height: 100%; overflow-y: auto; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit_ui", "Quit"),
        Binding("ctrl+c", "quit_ui", "Quit", priority=True, show=False),
        Binding("t", "other_tab", "Tab"),
        Binding("r", "refresh", "Refresh"),
        Binding("slash", "filter", "Filter"),
        Binding("question_mark", "keys", "Keys"),
        Binding("space", "mark", "Mark", show=False),
        *toggle_bindings(TOGGLES),
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
        # The journal's warning (a write done but not journaled), said with the write's line;
        # appended on a write's thread.
        self.warnings: list[str] = []
        run.warn_to = self.warnings.append
        # Kept, not queried: a query reads the screen on top, which may be a question.
        self.views: dict[str, RecordsView] = {
            r.name: RecordsView(r, page_size)
            for r in (CONVERSATION_RESOURCE, RISK_PROFILE_RESOURCE)
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
    async def load(self, view: RecordsView, *, up: bool = False) -> None:
        """The page below a view's rows (above them: `up`), off the screen's thread."""
        if view.fetching or not (view.has_before if up else view.has_more):
            return
        view.fetching = True
        name: ResourceName = view.resource.name
        filters, after, generation = dict(view.filters), view.after, view.generation
        before = view.before if up else None
        self.show_status()
        try:
            first, self.first_page = self.first_page, None
            if up:
                resource = getattr(self.run_context.client(), name)
                size = self.page_size
                page = await off_thread(
                    lambda: resource.list(filters or None, limit=size, ending_before=before)
                )
            elif first is not None and name == "conversations" and not filters and after is None:
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
            # `r` tries again; the other way still loads (the rows below a failed page above).
            if up:
                view.has_before = False
            else:
                view.has_more = False
            self.say(self.error_line(exc))
            return
        view.fetching = False
        if view.generation != generation:
            self.load(view)
            return
        rows, more = page["data"], bool(page.get("has_more"))
        if len(rows) > self.page_size:  # a service that ignored the limit: the rest when asked
            rows, more = (rows[-self.page_size :] if up else rows[: self.page_size]), True
        if not view.keeps_cursor(rows, up=up):
            # The cursor went to the other edge meanwhile: this page would push its row out
            # (and move it onto another record); asked for again when the cursor comes back.
            self.follow(view, down=up, up=not up)
            return
        added = bool(view.unseen(rows))
        if up:
            view.add_page_before(rows, more)
        else:
            view.add_page(rows, more)
        self.show_status()
        if added:
            # A page the cursor came near while this one was awaited was not asked for (one load
            # at a time). Only when rows came: a service repeating its rows is not asked again.
            self.follow(view)

    def follow(self, view: RecordsView, *, down: bool = True, up: bool = True) -> None:
        """The page the cursor is near asked for (`down`: below the rows, `up`: above)."""
        table = view.table
        if not table.row_count:
            return
        row = table.cursor_row  # now, not when an event was sent: rows move
        if down and row >= table.row_count - NEAR_END:
            self.load(view)
        elif up and row < NEAR_END and view.has_before:
            self.load(view, up=True)

    @on(DataTable.RowHighlighted)
    def highlighted(self, event: DataTable.RowHighlighted) -> None:
        for view in self.views.values():
            if view.table is event.data_table:
                view.show_detail()
                self.follow(view)

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

    def action_flip(self, name: str) -> None:
        view = self.view()
        resource, field = TOGGLES[name]
        if view.resource is not resource:
            self.say(f"{field.done[0].capitalize()} is for {resource.plural}.")
            return
        ids = view.targets()
        if not ids or not self.allowed(f"update {view.kind.plural}"):
            return
        # Every target already muted (pinned, archived): undo it; else do it.
        done = all(_is_set(view.record(id), name) for id in ids)
        value: object = not done
        if field.type == "timestamp":
            value = None if done else _now()
        changes: dict[str, Any] = {name: value}
        verb = field.done[1 if done else 0]
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
        selected = view.current_id()
        what = f"update {view.kind.plural}"
        if selected is None or not self.allowed(what):
            return
        current: str = selected
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
        view.unmark(done)
        view.show_detail()
        noun = kind.noun if len(done) == 1 else kind.plural
        line = f"{verb.capitalize()} {len(done)} {noun}."
        if failed:
            line += f" {len(failed)} failed: {failed[0]}"
        while self.warnings:
            line += f" Warning: {self.warnings.pop(0)}"
        self.say(line, busy="")


def _is_set(record: Record, field: str) -> bool:
    value = record.get(field)
    return value is not None and value is not False


def _now() -> int:
    import time

    return int(time.time())


def _records(number: int) -> str:
    return f"{number:,} record" if number == 1 else f"{number:,} records"
