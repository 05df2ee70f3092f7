"""The state of one run (ctx.obj) and the composition root: settings -> backend -> Client."""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from convrisk.cli.connect import backend_for
from convrisk.cli.errors import UsageProblem
from convrisk.cli.output.printer import Printer
from convrisk.cli.settings import (
    OUTPUT_FORMATS,
    ConfigFile,
    Flags,
    Settings,
    config_path,
    read_config,
)
from convrisk.cli.settings import resolve as resolve_settings

if TYPE_CHECKING:
    import logging

    from convrisk.api_client import Client
    from convrisk.api_client.remote.capture import CapturedRequest
    from convrisk.cli.journal.journaled import Recorder
    from convrisk.cli.output.fields import FieldChoice


class _NeverRaised(Exception):
    """Caught where --as-curl's stop would be, when --as-curl is off."""


class AppContext:
    """Flags, settings, the printer and the Client of one run; each built on first use."""

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self.env: Mapping[str, str] = os.environ if env is None else env
        self.flags = Flags()
        self.output_flag: str | None = None
        # --fields and --jq as given; the printer checks them (cli/output/fields.py).
        self.fields: FieldChoice | None = None
        self.jq: str | None = None
        # --as-curl: every request is printed as a curl command line and none is sent (the
        # guards read it: printing is not writing, so nothing is asked or refused).
        self.as_curl = False
        self.requests_printed = 0
        self.writes_printed = 0
        self._settings: Settings | None = None
        # Each config file read once per run; a failure is kept and raised again, never retried.
        self._configs: dict[Path, ConfigFile | UsageProblem] = {}
        self._settings_failed = False
        self._printer: Printer | None = None
        self._client: Client | None = None
        self._log_handler: logging.Handler | None = None
        # The command line as typed (main() sets it), for the journal.
        self.argv: list[str] = []
        self._recorder: Recorder | None = None
        # Where the journal's warning goes instead of stderr (`convrisk ui`: its status bar).
        self.warn_to: Callable[[str], None] | None = None

    def config_file(self, path: Path | None = None, *, warn: bool = True) -> ConfigFile:
        """The config file (default: the one `env` names), read once per run.

        A failure is remembered and raised again without reading the file a second time. The
        first read warns when the file holds a token that others may read, unless `warn` is
        False (`config set` and `unset` rewrite the file with mode 0600 anyway).
        """
        path = config_path(self.env) if path is None else path
        known = self._configs.get(path)
        if known is None:
            try:
                known = read_config(path)
            except UsageProblem as exc:
                known = exc
            else:
                warning = known.exposed_token_warning() if warn else None
                if warning is not None:
                    (self._printer or Printer("table", env=self.env)).warning(warning)
            self._configs[path] = known
        if isinstance(known, UsageProblem):
            self._settings_failed = True
            raise known
        return known

    def resolve(self, flags: Flags, env: Mapping[str, str] | None = None) -> Settings:
        """Settings for these flags and environment (default: the run's), over the config file
        read once per run."""
        env = self.env if env is None else env
        try:
            return resolve_settings(flags, env, self.config_file(config_path(env)))
        except Exception:
            self._settings_failed = True
            raise

    def settings(self) -> Settings:
        """The resolved settings (flags > environment > profile > defaults)."""
        if self._settings is None:
            flags = dataclasses.replace(self.flags, output=self.output_flag)
            self._settings = self.resolve(flags)
            s = self._settings
            # logging is imported only by --debug (or a library that uses it): before that, no
            # handler can exist to receive this line, so there is nothing to log it to.
            logging = sys.modules.get("logging")
            if logging is not None:
                logging.getLogger("convrisk.cli").debug(
                    "profile %s (%s); backend %s; token %s; page_size %s",
                    s.profile,
                    s.config_path,
                    s.base_url if s.is_remote else f"local {s.db}",
                    "set" if s.token else "not set",
                    s.page_size,
                )
        return self._settings

    def printer(self, output: str | None = None, *, json_errors: bool | None = None) -> Printer:
        """The printer in the format of -o, else CONVRISK_OUTPUT / the profile's output.

        `json_errors`: errors as JSON lines on stderr (default: with json and jsonl output)."""
        if self._printer is None:
            settings = self.settings()
            fmt = output or self.output_flag or settings.output
            shape = None
            if self.fields is not None or self.jq is not None:
                from convrisk.cli.output.fields import make_shape

                explicit = output or self.output_flag
                shape = make_shape(self.fields, self.jq, output_flag=explicit, fmt=fmt)
            self._printer = Printer(
                fmt,
                env=self.env,
                remote=settings.is_remote,
                shape=shape,
                json_errors=json_errors,
                chosen=bool(output or self.output_flag),
                requests_only=self.as_curl,
            )
        return self._printer

    def plain_printer(self) -> Printer:
        """A printer for commands that print plain lines (config, serve, --version)."""
        if self._printer is None:
            self._printer = Printer("table", env=self.env)
        return self._printer

    def error_printer(self) -> Printer:
        """The printer for an error: the run's own, or one in the format asked for if any.

        Settings that already failed are not resolved again (the error at hand may be theirs).
        """
        if self._printer is not None:
            return self._printer
        fmt = (self.output_flag or self.env.get("CONVRISK_OUTPUT") or "").lower()
        if not fmt and not self._settings_failed:
            try:
                fmt = self.settings().output
            except Exception:  # broken settings: the error being reported comes first
                fmt = "table"
        remote = self._settings.is_remote if self._settings is not None else False
        return Printer(fmt if fmt in OUTPUT_FORMATS else "table", env=self.env, remote=remote)

    def client(self) -> Client:
        """The Client over the chosen backend, built once per run."""
        if self._client is None:
            settings = self.settings()
            if settings.is_remote and not settings.token:
                from convrisk.api_client.endpoint import shown_url

                where = shown_url(settings.base_url or "")
                self.printer().warning(
                    f"No token is set for {where}: set CONVRISK_TOKEN, or run "
                    "`convrisk config set token` and paste it."
                )
            capture = self._print_request if self.as_curl else None
            self._client = build_client(settings, self.recorder(), capture=capture)
        return self._client

    def captured(self) -> type[Exception]:
        """What a request printed by --as-curl raises (api_client.remote.capture.Captured): a loop
        whose requests do not depend on each other's answers catches it and goes on. Without
        --as-curl, an exception nothing raises (and no HTTP client is loaded)."""
        if not self.as_curl:
            return _NeverRaised
        from convrisk.api_client.remote.capture import Captured

        return Captured

    def _print_request(self, request: CapturedRequest) -> None:
        """--as-curl: print a captured request as a curl command line on stdout."""
        from convrisk.cli.output.as_curl import command_line

        self.printer().line(command_line(request))
        self.requests_printed += 1
        if request.method not in ("GET", "HEAD"):
            self.writes_printed += 1

    def recorder(self) -> Recorder | None:
        """The journal of this run's writes; None when CONVRISK_JOURNAL=off, or with --as-curl
        (nothing is sent, so nothing is written)."""
        from convrisk.cli.journal.journaled import Recorder, journal_off

        if self._recorder is None and not (
            journal_off(self.env) or getattr(self, "as_curl", False)
        ):
            settings = self.settings()
            remote = settings.base_url is not None
            self._recorder = Recorder(
                None,
                env=self.env,
                profile=settings.profile,
                backend="remote" if remote else "local",
                target=journal_target(settings),
                argv=["convrisk", *self.argv],
                secrets=[s for s in (settings.token, self.env.get("CONVRISK_TOKEN")) if s],
                warn=lambda text: (self.warn_to or self.printer().warning)(text),
            )
        return self._recorder

    @contextmanager
    def journal_note(self, **extra: Any) -> Iterator[None]:
        """Entries journaled inside carry these keys too (`undoes`, `stands_for`: undo)."""
        recorder = self.recorder()
        if recorder is None:
            yield
            return
        with recorder.note(**extra):
            yield

    def start_debug_log(self) -> None:
        """Send the "convrisk" loggers to stderr at DEBUG level (--debug)."""
        import logging

        from convrisk.cli.output.printer import debug_handler

        if self._log_handler is None:
            self._log_handler = debug_handler()
            logger = logging.getLogger("convrisk")
            logger.setLevel(logging.DEBUG)
            logger.addHandler(self._log_handler)

    def stop_debug_log(self) -> None:
        """Detach the --debug handler (main() may run again in the same process, as in tests)."""
        if self._log_handler is not None:
            import logging

            logger = logging.getLogger("convrisk")
            logger.removeHandler(self._log_handler)
            logger.setLevel(logging.NOTSET)
            self._log_handler = None

    def close(self) -> None:
        """Release the backend (called when the command's context closes)."""
        if self._client is not None:
            client, self._client = self._client, None
            client.close()


def journal_target(settings: Settings) -> str:
    """Where writes go, as the journal records it and `undo` compares it: the base_url (it holds
    no credentials: settings refuse them), or the database's absolute path (a relative --db
    names another file from another folder)."""
    if settings.base_url is not None:
        return settings.base_url
    return str(settings.db.absolute())


def build_client(
    settings: Settings,
    journal: Recorder | None = None,
    *,
    capture: Callable[[CapturedRequest], None] | None = None,
) -> Client:
    """The composition root: a remote HTTPBackend for a base_url, else the local SQLite file;
    its writes journaled when a `journal` is given.

    With `capture` (--as-curl), the remote backend of the same settings, whose requests go to
    `capture` and are not sent (see `capturing_client`); nothing is journaled.
    """
    from convrisk.api_client import Client

    if capture is not None:
        return capturing_client(settings, capture)
    backend = backend_for(settings)
    if journal is not None:
        from convrisk.cli.journal.journaled import JournaledBackend

        backend = JournaledBackend(backend, journal)
    return Client(backend, page_size=settings.page_size)


def capturing_client(settings: Settings, capture: Callable[[CapturedRequest], None]) -> Client:
    """A Client whose requests are built by the remote backend and handed to `capture`, never
    sent: the service of the settings, or on the local backend a placeholder URL that
    `--as-curl` prints as $CONVRISK_BASE_URL (the request a remote service would get).

    The real token never reaches it: a placeholder stands for it, printed as $CONVRISK_TOKEN.
    Nothing journals these requests: none is sent.
    """
    from convrisk.api_client import Client
    from convrisk.api_client.errors import ConvriskError
    from convrisk.api_client.remote.capture import (
        PLACEHOLDER_BASE_URL,
        PLACEHOLDER_TOKEN,
        CaptureTransport,
    )
    from convrisk.api_client.remote.http import HTTPBackend

    remote = settings.base_url is not None
    try:
        backend = HTTPBackend(
            settings.base_url if settings.base_url is not None else PLACEHOLDER_BASE_URL,
            PLACEHOLDER_TOKEN if settings.token or not remote else None,
            timeout=settings.timeout,
            max_retries=settings.max_retries,
            max_response_bytes=settings.max_response_mb * 1024 * 1024,
            transport=CaptureTransport(capture),
            allow_insecure_http=settings.allow_insecure_http,
        )
    except ConvriskError as exc:
        # The same refusal the command would meet (a token over plain http, ...): exit 2.
        raise UsageProblem(f"{exc}", param=getattr(exc, "param", None)) from exc
    return Client(backend, page_size=settings.page_size)


def app_context(ctx: typer.Context) -> AppContext:
    """The AppContext of this run (made here when a test invokes the app without main())."""
    return ctx.ensure_object(AppContext)
