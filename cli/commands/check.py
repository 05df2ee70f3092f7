"""`convrisk check`: the scenario of local_backend.conformance against the profile's service,
compared with an in-process sandbox; a line per difference, JUnit XML for CI."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from convrisk.cli import guard
from convrisk.cli.context import AppContext, app_context, build_client
from convrisk.cli.errors import CheckFailed, UsageProblem
from convrisk.cli.options import common as opt
from convrisk.cli.output.kinds import DIFFERENCES

if TYPE_CHECKING:
    from convrisk.cli.settings import Settings
    from convrisk.local_backend.conformance import Check, StepResult


def check(
    ctx: typer.Context,
    junit: Annotated[
        str | None,
        typer.Option(
            "--junit",
            metavar="FILE",
            help="Also write the result as JUnit XML (a testcase per step, a failure per "
            "difference), for CI.",
        ),
    ] = None,
    keep: Annotated[
        bool,
        typer.Option("--keep", help="Leave the records the check created, and print their ids."),
    ] = False,
    yes: opt.WriteYes = False,
    output: opt.Output = None,
) -> None:
    """Check that the profile's service answers as `convrisk serve` does.

    A scenario (create both kinds, get, list with each filter, page both ways, update every
    field, delete, the errors for a bad id, body and token) runs on the service; each answer is
    held to the OpenAPI document and compared with the same scenario on an in-process sandbox
    (ids and the service's times masked). Prints one line per difference (each a record with
    -o json, jsonl or csv) and a summary on stderr; exit 0 when nothing differs, 1 otherwise.

    The records it creates carry the marker convrisk-check-<run id> (as group_id, contact_id or
    customer_id, and in details); they are deleted at the end, unless --keep (their ids are
    then listed on stderr).

    \b
    Example:
      convrisk check
      convrisk --profile staging check --junit check.xml
      convrisk check -o jsonl
    """
    from convrisk.local_backend import conformance

    run = app_context(ctx)
    if run.as_curl:
        raise UsageProblem(
            "--as-curl sends nothing, and `convrisk check` needs the service's answers: run it "
            "without --as-curl.",
            param="--as-curl",
        )
    settings = run.settings()
    if not settings.is_remote:
        raise UsageProblem(
            "`convrisk check` tests a service against convrisk's own: set base_url (--base-url "
            "URL or CONVRISK_BASE_URL) to the service or to a `convrisk serve`, with its token; "
            "the local database is no service to check.",
            param="--base-url",
        )
    printer = run.printer(output)
    printer.format_for(DIFFERENCES)
    junit_path = _junit_path(junit)
    what = "create and delete check records on the service"
    guard.refuse_early(run, what, yes=yes)
    guard.check_write(
        run, count=conformance.records_created(), what=what, max_affected=None, yes=yes
    )
    from convrisk.local_backend.sandbox.contract import Contract

    rules = Contract.load()
    service = build_client(settings)
    wrong = build_client(_with_wrong_token(settings))
    run_id = conformance.new_run_id()
    results: list[StepResult] = []
    import tempfile

    with tempfile.TemporaryDirectory(prefix="convrisk-check-") as folder:
        sandbox = conformance.Sandbox(Path(folder) / "sandbox.db")
        side = conformance.Side(service.send, wrong.send)
        checking = conformance.Check(side, sandbox.side(), rules, run_id)
        total = len(checking.steps)
        printer.notice(
            f"Checking {_where(settings.base_url)}: {total} steps; the records carry "
            f"{conformance.marker(run_id)}."
        )
        try:
            with printer.records(DIFFERENCES, many=True) as sink:
                for result in checking.run():
                    results.append(result)
                    printer.progress(f"step {len(results)}/{total}: {result.name}")
                    sink.write([_row(result, difference) for difference in result.differences])
        finally:
            printer.clear_progress()
            sandbox.close()
            _end(run, checking, keep=keep, finished=len(results) == total)
            if junit_path is not None:
                _write_junit(junit_path, results)
            service.close()
            wrong.close()
    found = sum(len(result.differences) for result in results)
    summary = f"{len(results)} steps run, {found} difference{'' if found == 1 else 's'}"
    if found:
        raise CheckFailed(f"{summary}: the service does not answer as convrisk serve does.")
    printer.notice(f"Checked: {summary}.")


def _row(result: StepResult, difference: str) -> dict[str, str]:
    """A difference as a record of DIFFERENCES."""
    return {
        "step": result.name,
        "method": result.method,
        "target": result.target,
        "difference": difference,
    }


def _end(run: AppContext, checking: Check, *, keep: bool, finished: bool) -> None:
    """Delete what the check left on the service (or, with --keep, list it); say what is left."""
    printer = run.printer()
    if not finished:
        printer.notice("The check stopped before its last step.")
    if keep:
        kept = list(checking.service.live.values())
        if kept:
            printer.notice(f"Kept {len(kept)} records (--keep):")
            for record_id in kept:
                printer.notice(f"  {record_id}")
        return
    deleted, left = checking.clean_up()
    if left:
        printer.warning(
            f"{len(left)} records of the check are left on the service (delete them by hand):"
        )
        for record_id, why in left:
            printer.notice(f"  {record_id}: {why}")
    elif deleted:
        printer.notice(f"Deleted the {len(deleted)} records the check left.")


def _junit_path(text: str | None) -> Path | None:
    """--junit FILE, checked before anything is sent: its folder must exist."""
    if text is None:
        return None
    if not text:
        raise UsageProblem("--junit FILE is empty: give a file name.", param="--junit")
    path = Path(text)
    if not path.parent.is_dir():
        raise UsageProblem(f"--junit: the folder of {text} does not exist.", param="--junit")
    if path.is_dir():
        raise UsageProblem(f"--junit: {text} is a folder, not a file.", param="--junit")
    return path


def _write_junit(path: Path, results: list[StepResult]) -> None:
    """The results as JUnit XML, written whole or not at all."""
    import tempfile
    from xml.etree import ElementTree as ET

    failures = sum(1 for result in results if result.differences)
    suite = ET.Element(
        "testsuite",
        name="convrisk check",
        tests=str(len(results)),
        failures=str(failures),
        errors="0",
        time=f"{sum(result.seconds for result in results):.3f}",
    )
    for result in results:
        case = ET.SubElement(
            suite,
            "testcase",
            classname="convrisk.check",
            name=_xml_text(result.name),
            time=f"{result.seconds:.3f}",
        )
        for difference in result.differences:
            shown = _xml_text(difference)
            failure = ET.SubElement(case, "failure", message=shown, type="difference")
            failure.text = _xml_text(f"{result.method} {result.target}: {difference}")
    data = ET.tostring(suite, encoding="utf-8", xml_declaration=True)
    name = ""
    try:
        fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as out:
            out.write(data + b"\n")
        os.replace(name, path)
    except OSError as exc:
        if name and os.path.exists(name):
            os.unlink(name)
        raise UsageProblem(
            f"Cannot write --junit {path}: {exc.strerror or exc}.", param="--junit"
        ) from None


def _xml_text(text: str) -> str:
    """`text` with each character XML 1.0 cannot hold (U+FFFE, U+FFFF, a control character, a
    lone surrogate) written as an escape, so that the JUnit file stays well-formed."""
    import re

    return re.sub(
        "[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]",
        lambda found: f"\\u{ord(found.group()):04x}",
        text,
    )


def _with_wrong_token(settings: Settings) -> Settings:
    """The same settings with a token no service has issued (for the 401 steps)."""
    import dataclasses
    import secrets

    return dataclasses.replace(settings, token=f"convrisk-check-{secrets.token_urlsafe(24)}")


def _where(base_url: str | None) -> str:
    from convrisk.api_client.endpoint import shown_url

    return shown_url(base_url or "")
