"""`convrisk check --junit FILE`: the file is well-formed XML whatever the service sent."""

from __future__ import annotations

from pathlib import Path
from xml.etree import ElementTree as ET

from convrisk.cli.commands.check import _write_junit
from convrisk.local_backend.conformance import StepResult


def test_a_difference_with_characters_xml_cannot_hold_still_gives_well_formed_junit(
    tmp_path: Path,
) -> None:
    # A service's value with U+FFFE / U+FFFF (valid JSON, printable to safe_line, not XML).
    difference = 'body /contact_id: service sent "a\ufffeb\uffff", the sandbox null'
    step = StepResult("get conversation #1", "GET", "/v1/conversations/x\ufffe", 200, [difference])
    path = tmp_path / "check.xml"
    _write_junit(path, [step])
    suite = ET.parse(path).getroot()
    [case] = suite.findall("testcase")
    [failure] = case.findall("failure")
    assert (
        failure.get("message")
        == 'body /contact_id: service sent "a\\ufffeb\\uffff", the sandbox null'
    )
    assert failure.text == f"GET /v1/conversations/x\\ufffe: {failure.get('message')}"
