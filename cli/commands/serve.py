"""`convrisk serve`: the service over HTTP on a local SQLite file, until SIGINT or SIGTERM."""

from __future__ import annotations

import dataclasses
import math
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from convrisk.cli.connect import database_path
from convrisk.cli.context import AppContext, app_context
from convrisk.cli.errors import UsageProblem
from convrisk.cli.options import complete
from convrisk.cli.options.values import whole_number

if TYPE_CHECKING:
    from convrisk.cli.settings import Settings
    from convrisk.local_backend.serve.faults import Chaos
    from convrisk.local_backend.serve.proxy import Proxy
    from convrisk.local_backend.serve.recording import Recorder
    from convrisk.local_backend.store.clock import SandboxClock
    from convrisk.local_backend.store.ids import IdSource

# The process serve lives with (convrisk.testing's): it stops once that one has ended.
PARENT_PID_ENV = "CONVRISK_SERVE_PARENT_PID"


def serve(
    ctx: typer.Context,
    host: Annotated[
        str, typer.Option("--host", metavar="HOST", help="Address to bind (loopback by default).")
    ] = "127.0.0.1",
    port: Annotated[
        str, typer.Option("--port", metavar="PORT", help="0 to 65535; 0 picks a free port.")
    ] = "8000",
    db: Annotated[
        str | None,
        typer.Option(
            "--db",
            metavar="PATH",
            help="The SQLite file to serve (default: as for other commands).",
        ),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            metavar="T",
            help="The bearer token clients must send (env CONVRISK_SERVE_TOKEN; none: the one "
            "kept in <db>.token, made on the first start).",
            show_default=False,
        ),
    ] = None,
    latency: Annotated[
        str | None,
        typer.Option(
            "--latency",
            metavar="MS|MIN-MAX",
            help="Delay every API answer by MS milliseconds, or a random MIN to MAX.",
            show_default=False,
        ),
    ] = None,
    faults: Annotated[
        str,
        typer.Option(
            "--faults",
            metavar="RATE",
            help="Answer this fraction (0 to 1) of API requests with an injected fault: 500, "
            "503 or 429 with Retry-After, a dropped connection, or a drop after the operation.",
        ),
    ] = "0",
    seed: Annotated[
        str | None,
        typer.Option(
            "--seed",
            metavar="N",
            help="Seed of --faults, --latency and ids: the same requests get the same faults "
            "and the same ids (default: a random seed for faults, printed at start; random ids). "
            "`sandbox reset` starts the ids (and --clock's time) over.",
            show_default=False,
        ),
    ] = None,
    clock: Annotated[
        str | None,
        typer.Option(
            "--clock",
            metavar="TIME|frozen[@TIME]",
            help="The time records are stamped with: TIME (ISO 8601 with a zone, e.g. "
            "2025-01-01T00:00:00Z), then 1 s more for each record created or changed; frozen: "
            "the start (or TIME), never moving.",
            show_default=False,
        ),
    ] = None,
    log_format: Annotated[
        str,
        typer.Option(
            "--log-format",
            metavar="text|json",
            help="Access log on stderr: text or json.",
            autocompletion=complete.log_formats,
        ),
    ] = "text",
    load: Annotated[
        str | None,
        typer.Option(
            "--load",
            metavar="FILE",
            help="Start from this snapshot (`sandbox snapshot`, GET /__sandbox/snapshot): it "
            "replaces the records of --db; without --db, a fresh temporary database is served.",
            show_default=False,
        ),
    ] = None,
    proxy_to: Annotated[
        str | None,
        typer.Option(
            "--proxy-to",
            metavar="URL",
            help="Forward every /v1 request to this service (http:// or https://), the "
            "client's Authorization unchanged, and check each request and answer against the "
            "OpenAPI document.",
            show_default=False,
        ),
    ] = None,
    validate: Annotated[
        str | None,
        typer.Option(
            "--validate",
            metavar="report|enforce",
            help="With --proxy-to: report logs each violation (and keeps it in the request "
            "journal), passing the answer through; enforce also turns a violating answer into "
            "a 502 naming it.  [default: report]",
            show_default=False,
        ),
    ] = None,
    proxy_timeout: Annotated[
        str | None,
        typer.Option(
            "--proxy-timeout",
            metavar="SECONDS",
            help="With --proxy-to: the most one exchange with the service may take, connect to "
            "last byte, before a 504.  [default: 30]",
            show_default=False,
        ),
    ] = None,
    record: Annotated[
        str | None,
        typer.Option(
            "--record",
            metavar="FILE",
            help="With --proxy-to: keep the last state of each record the service answered "
            "with (deleted ones dropped) and write them to FILE as a snapshot when serve stops, "
            "for `serve --load FILE`.",
            show_default=False,
        ),
    ] = None,
    read_only: Annotated[
        bool,
        typer.Option(
            "--read-only",
            help="Answer every write (any method but GET, HEAD and OPTIONS: /v1 and "
            "/__sandbox/ alike) with a 403 permission_error; needed to serve a read-only profile.",
        ),
    ] = False,
) -> None:
    """Serve the conversations and risk-profiles service over HTTP on a local database.

    Prints a ready-to-paste `export CONVRISK_BASE_URL=... CONVRISK_TOKEN=...` line, then one
    log line per request on stderr. It serves a local database: --profile P serves P's db;
    --base-url is refused; a read-only profile is served only with --read-only. GET
    /openapi.json describes the interface. Stops cleanly on Ctrl-C (SIGINT) or SIGTERM.

    \b
    Example:
      convrisk serve --port 8000
      convrisk serve --port 0 --db /tmp/demo.db --faults 0.2 --latency 5-50 --seed 7
      convrisk serve --port 0 --seed 7 --clock 2025-01-01T00:00:00Z   # same ids, same times
      CONVRISK_SERVE_TOKEN=s3cret convrisk serve --log-format json
      convrisk serve --port 0 --load fixtures.jsonl
      convrisk --profile audit serve --port 0 --read-only
      convrisk serve --port 0 --token "$T" --proxy-to https://api.example.com --validate enforce
      convrisk serve --port 0 --token "$T" --proxy-to https://api.example.com --record seed.jsonl
    """
    import secrets

    from convrisk.local_backend.serve.access_log import LOG_FORMATS
    from convrisk.local_backend.serve.faults import Chaos
    from convrisk.local_backend.serve.server import is_loopback, run_server

    port_number = whole_number(port, "--port", 0, 65535)
    run = app_context(ctx)
    if log_format not in LOG_FORMATS:
        raise UsageProblem(
            f"--log-format must be text or json, not {log_format!r}.", param="--log-format"
        )
    fault_rate = _fault_rate(faults)
    seed_number = None if seed is None else whole_number(seed, "--seed", 0)
    chaos = Chaos(
        latency_ms=_latency(latency),
        fault_rate=fault_rate,
        seed=secrets.randbelow(2**31) if seed_number is None else seed_number,
    )
    proxy = _proxy(run, proxy_to, validate, proxy_timeout, load, clock, record)
    sandbox_clock = None if clock is None else _sandbox_clock(clock)
    id_sources = None if seed_number is None else _seeded_ids(seed_number, sandbox_clock)
    given = token if token is not None else run.env.get("CONVRISK_SERVE_TOKEN")
    source = "--token" if token is not None else "CONVRISK_SERVE_TOKEN"
    if given is not None:
        problem = _token_problem(given)
        if problem is not None:
            raise UsageProblem(f"{source}: {problem}", param="--token")
    parent_pid = _parent_pid(run.env.get(PARENT_PID_ENV))
    served = _served_settings(run, db)
    db_path = Path(database_path(served))
    _check_read_only(served, read_only=read_only, load=load, db=db or run.flags.db)
    rows = None if load is None else _snapshot_rows(load)
    scratch = None
    if (rows is not None or proxy is not None) and not (db or run.flags.db):
        import tempfile

        # Nobody's data is replaced by a --load that names no database, and a proxy, which
        # keeps no records, opens none of the user's.
        scratch = tempfile.TemporaryDirectory(prefix="convrisk-serve-")
        db_path = Path(scratch.name) / "sandbox.db"
    printer = run.plain_printer()
    stored = None
    if given is None:
        from convrisk.local_backend.serve.token import UnsafeTokenFile, load_or_create

        try:
            stored = load_or_create(db_path)
        except UnsafeTokenFile as exc:
            raise UsageProblem(exc.message, param="--token") from None
    secret = given if given is not None else stored.token if stored is not None else ""

    def ready(url: str) -> None:
        """Listening: only now is the token worth printing (a failed start shows none)."""
        printer.notice(f"convrisk serve: listening on {url}")
        printer.notice(f"convrisk serve: database {db_path}")
        if not is_loopback(host):
            printer.warning(
                f"{host} is not a loopback address: anyone who can reach this machine can "
                "reach the service (with the token). Use --host 127.0.0.1 unless you mean it."
            )
        if proxy is not None:
            for level, line in _proxy_text(proxy):
                if level == "warning":
                    printer.warning(line)
                else:
                    printer.notice(line)
        if read_only:
            printer.notice(
                "convrisk serve: read-only (--read-only): every write is answered 403, "
                "nothing is written"
            )
        if chaos.active:
            printer.notice(f"convrisk serve: {_chaos_text(chaos)}")
        # In proxy mode the ids are the upstream's: --seed repeats the faults alone.
        ids_seed = None if proxy is not None else seed_number
        for line in _repeatable_text(ids_seed, sandbox_clock):
            printer.notice(f"convrisk serve: {line}")
        base = "export CONVRISK_BASE_URL=" + shlex.quote(_client_url(url))
        if stored is not None:
            state = "made now" if stored.created else "kept from an earlier start"
            printer.notice(f"convrisk serve: token in {stored.path} ({state})")
            printer.notice(f"{base} CONVRISK_TOKEN={shlex.quote(stored.token)}")
        elif source == "CONVRISK_SERVE_TOKEN":
            printer.notice(f'{base} CONVRISK_TOKEN="$CONVRISK_SERVE_TOKEN"')
        else:
            printer.notice(f"{base}  # and CONVRISK_TOKEN=<the --token value>")

    try:
        run_server(
            host=host,
            port=port_number,
            db_path=db_path,
            token=secret,
            on_ready=ready,
            log=printer.block,  # lines escaped by the log itself; a 5xx's reason spans lines
            log_format=log_format,
            chaos=chaos,
            clock=sandbox_clock,
            id_sources=id_sources,
            load=rows,
            proxy=proxy,
            read_only=read_only,
            parent_pid=parent_pid,
        )
    finally:
        if scratch is not None:
            scratch.cleanup()


def _parent_pid(value: str | None) -> int | None:
    """CONVRISK_SERVE_PARENT_PID checked: the process id serve stops with (it must be the one
    that started serve), or None when unset."""
    if value is None or not value.strip():
        return None
    import os

    pid = whole_number(value.strip(), PARENT_PID_ENV, 1)
    if pid != os.getppid():
        raise UsageProblem(
            f"{PARENT_PID_ENV} is {pid}, not the process that started convrisk serve "
            f"({os.getppid()}); leave it unset unless that process sets it.",
            param=PARENT_PID_ENV,
        )
    return pid


def _proxy(
    run: AppContext,
    url: str | None,
    validate: str | None,
    timeout: str | None,
    load: str | None,
    clock: str | None,
    record: str | None,
) -> Proxy | None:
    """--proxy-to and its options checked: the proxy, or None without --proxy-to."""
    if url is None:
        given_names = ((validate, "--validate"), (timeout, "--proxy-timeout"), (record, "--record"))
        for given, name in given_names:
            if given is not None:
                raise UsageProblem(f"{name} applies only with --proxy-to URL.", param=name)
        return None
    from convrisk.api_client.endpoint import base_url_problem, shown_url
    from convrisk.local_backend.serve.proxy import DEFAULT_TIMEOUT, MAX_TIMEOUT, MODES, Proxy

    for given, name in ((load, "--load"), (clock, "--clock")):
        if given is not None:
            raise UsageProblem(
                f"{name} does not apply with --proxy-to: the records are the upstream's.",
                param=name,
            )
    problem = base_url_problem(url, "--proxy-to")
    if problem is not None:
        raise UsageProblem(problem, param="--proxy-to")
    mode = "report" if validate is None else validate.strip().lower()
    if mode not in MODES:
        raise UsageProblem(
            f"--validate must be report or enforce, not {validate!r}.", param="--validate"
        )
    seconds = DEFAULT_TIMEOUT if timeout is None else _seconds(timeout, MAX_TIMEOUT)
    env = {k: v for k, v in run.env.items() if k != "CONVRISK_BASE_URL"}
    cap = run.resolve(run.flags, env).max_response_mb * 1024 * 1024
    recorder = None if record is None else _recorder(record)
    try:
        return Proxy(url.strip(), mode, seconds, cap, recorder)
    except ValueError as exc:
        raise UsageProblem(f"--proxy-to: {exc} ({shown_url(url)}).", param="--proxy-to") from None


def _recorder(file: str) -> Recorder:
    """--record FILE: the recorder, once a file can be made beside FILE; a usage error
    otherwise (at start, not at stop)."""
    from convrisk.api_client.text import printable
    from convrisk.local_backend.serve.recording import Recorder

    if not file.strip() or file == "-":
        raise UsageProblem("--record takes a file name (not - or empty).", param="--record")
    try:
        return Recorder(Path(file))
    except ValueError as exc:
        raise UsageProblem(f"--record {printable(file)}: {exc}.", param="--record") from None


def _seconds(text: str, most: float) -> float:
    """--proxy-timeout: seconds, more than 0 and at most `most`; a usage error otherwise."""
    try:
        value = float(text.strip())
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or not 0 < value <= most:
        raise UsageProblem(
            f"--proxy-timeout must be seconds, more than 0 and at most {most:g}, not {text!r}.",
            param="--proxy-timeout",
        )
    return value


def _proxy_text(proxy: Proxy) -> list[tuple[str, str]]:
    """What the banner says of the proxy: (printer method, line)."""
    from urllib.parse import urlsplit

    from convrisk.api_client.endpoint import is_loopback_host, shown_url
    from convrisk.api_client.text import printable

    shown = shown_url(proxy.upstream)
    lines = [
        (
            "notice",
            f"convrisk serve: /v1 goes to {shown} (--validate {proxy.mode}, timeout "
            f"{proxy.timeout:g} s, answers up to {proxy.max_bytes // (1024 * 1024)} MiB); "
            "the sandbox's own store is not used",
        )
    ]
    if proxy.recorder is not None:
        lines.append(
            (
                "notice",
                f"convrisk serve: recording the records answered; written to "
                f"{printable(str(proxy.recorder.path))} when serve stops",
            )
        )
    parts = urlsplit(proxy.upstream)
    if parts.scheme == "http" and not is_loopback_host(parts.hostname or ""):
        lines.append(
            (
                "warning",
                f"{shown} is plain http://: the clients' tokens cross the network readable. "
                "Use https:// unless that network is trusted.",
            )
        )
    return lines


def _snapshot_rows(path: str) -> dict[str, list[dict[str, Any]]]:
    """--load FILE read and checked whole (local_backend.sandbox.snapshot); a usage error
    otherwise."""
    from convrisk.api_client.errors import InvalidRequestError
    from convrisk.api_client.sandbox import MAX_SNAPSHOT_BYTES
    from convrisk.api_client.text import printable
    from convrisk.local_backend.sandbox import snapshot

    shown = printable(path)
    try:
        with open(path, "rb") as file:
            data = file.read(MAX_SNAPSHOT_BYTES + 1)
    except OSError as exc:
        raise UsageProblem(f"--load {shown}: {exc.strerror or exc}.", param="--load") from None
    try:
        return snapshot.parse(data)
    except InvalidRequestError as exc:
        raise UsageProblem(f"--load {shown}: {exc.message}", param="--load") from None


def _check_read_only(
    settings: Settings, *, read_only: bool, load: str | None, db: str | None
) -> None:
    """A read-only profile is served only with --read-only, and never with --load (a write);
    --read-only --load loads only into a temporary database (no --db). A usage error
    otherwise, before anything is written."""
    from convrisk.cli.settings import mark_source

    if settings.read_only:
        marked = (
            f"The profile {settings.profile!r} is read-only "
            f"({mark_source(settings.sources, 'read_only')})"
        )
        if not read_only:
            raise UsageProblem(
                f"{marked}: serve would open {settings.db} to writes. Pass "
                "--read-only to serve it with every write answered 403; nothing was started.",
                param="--read-only",
            )
        if load is not None:
            raise UsageProblem(
                f"{marked}: --load replaces the records served, a write; nothing was started.",
                param="--load",
            )
    if read_only and load is not None and db:
        raise UsageProblem(
            f"--load would replace the records of {db}, and --read-only writes nothing: drop "
            "--db to serve the snapshot from a temporary database; nothing was started.",
            param="--load",
        )


def _served_settings(run: AppContext, db: str | None) -> Settings:
    """The settings of the file to serve: --db, else CONVRISK_DB or the db of the profile, else
    the default.

    serve always serves a local database: --base-url is refused, and so is a --profile that
    is remote without a db of its own (its base_url cannot be served). CONVRISK_BASE_URL, as
    `serve` itself prints it for clients, is ignored here.
    """
    if run.flags.base_url is not None:
        raise UsageProblem(
            "serve serves a local database: --base-url does not apply (give --db PATH).",
            param="--base-url",
        )
    env = {k: v for k, v in run.env.items() if k != "CONVRISK_BASE_URL"}
    flags = dataclasses.replace(run.flags, db=db or run.flags.db)
    settings = run.resolve(flags, env)
    if run.flags.profile and settings.is_remote:
        raise UsageProblem(
            f"Profile {settings.profile!r} is remote (base_url) and sets no db: serve serves a "
            "local database. Give --db PATH, or a profile with a db.",
            param="--profile",
        )
    return settings


def _token_problem(token: str) -> str | None:
    from convrisk.api_client.endpoint import token_problem

    return token_problem(token)


def _fault_rate(text: str) -> float:
    """--faults: a finite number from 0 to 1; a usage error otherwise."""
    try:
        rate = float(text.strip())
    except ValueError:
        rate = math.nan
    if not math.isfinite(rate) or not 0.0 <= rate <= 1.0:
        raise UsageProblem(
            f"--faults must be a number from 0 to 1, not {text!r}.", param="--faults"
        )
    return rate


def _latency(text: str | None) -> tuple[int, int]:
    """`MS` or `MIN-MAX` (whole milliseconds) as (low, high); a usage error otherwise."""
    from convrisk.local_backend.serve.faults import MAX_LATENCY_MS

    if text is None:
        return (0, 0)
    low, sep, high = text.strip().partition("-")
    parts = (low, high) if sep else (low, low)
    if not all(part.strip().isdigit() for part in parts):
        raise UsageProblem(
            f"--latency must be milliseconds (50) or a range (10-200), not {text!r}.",
            param="--latency",
        )
    values = (int(parts[0]), int(parts[1]))
    if values[0] > values[1] or values[1] > MAX_LATENCY_MS:
        raise UsageProblem(
            f"--latency: MIN must not exceed MAX, and MAX must be at most {MAX_LATENCY_MS} ms "
            f"(got {text!r}).",
            param="--latency",
        )
    return values


def _sandbox_clock(text: str) -> SandboxClock:
    """--clock: TIME (1 s more a record stamped), `frozen` (now) or `frozen@TIME`; else a usage
    error."""
    import time

    from convrisk.local_backend.store.clock import STEP_SECONDS, SandboxClock

    spec = text.strip()
    frozen = spec == "frozen" or spec.startswith("frozen@")
    moment = spec.removeprefix("frozen@") if spec != "frozen" else None
    start = int(time.time()) if moment is None else _clock_time(moment, text)
    return SandboxClock(start, 0 if frozen else STEP_SECONDS)


# The latest start --clock takes: any later and stamps could leave what dates can show.
_LAST_START = 253_370_764_800  # 9999-01-01T00:00:00Z


def _clock_time(moment: str, text: str) -> int:
    """An ISO 8601 time with a zone as whole Unix seconds (a fraction is dropped)."""
    from datetime import datetime

    try:
        parsed = datetime.fromisoformat(moment)
    except ValueError:
        parsed = None
    if parsed is None or parsed.tzinfo is None:
        raise UsageProblem(
            "--clock must be an ISO 8601 time with a zone (2025-01-01T00:00:00Z), frozen, or "
            f"frozen@TIME, not {text!r}.",
            param="--clock",
        )
    seconds = parsed.timestamp()
    if not 0 <= seconds < _LAST_START:
        raise UsageProblem(
            f"--clock must lie from 1970-01-01T00:00:00Z to 9999-01-01T00:00:00Z, not {text!r}.",
            param="--clock",
        )
    return int(seconds)


def _seeded_ids(seed: int, clock: SandboxClock | None) -> dict[str, IdSource]:
    """Each resource's repeatable ids; on the real clock an id carries a fixed time (0) instead
    of its creation time, or it could not repeat."""
    from convrisk.api_client.resources import RESOURCES
    from convrisk.local_backend.store.ids import seeded

    fixed = 0 if clock is None else None
    return {name: seeded(seed, name, fixed_millis=fixed) for name in RESOURCES}


def _repeatable_text(seed: int | None, clock: SandboxClock | None) -> list[str]:
    """What the banner says of --seed (ids) and --clock."""
    import time

    lines = []
    if seed is not None:
        lines.append(f"ids repeat with --seed {seed} (the same calls from the same data)")
    if clock is not None:
        shown = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(clock.start))
        if clock.frozen:
            lines.append(f"clock frozen at {shown}")
        else:
            lines.append(f"clock starts at {shown}, {clock.step} s more for each record stamped")
    return lines


def _chaos_text(chaos: Chaos) -> str:
    """What is injected, and the seed that repeats it."""
    parts = []
    low, high = chaos.latency_ms
    if high:
        parts.append(f"latency {low} ms" if low == high else f"latency {low}-{high} ms")
    if chaos.fault_rate:
        parts.append(f"faults {chaos.fault_rate:.0%} of API requests")
    return ", ".join(parts) + f" (--seed {chaos.seed} repeats them)"


def _client_url(url: str) -> str:
    """The URL a client on this machine uses: a wildcard address becomes loopback."""
    return url.replace("//0.0.0.0:", "//127.0.0.1:").replace("//[::]:", "//[::1]:")
