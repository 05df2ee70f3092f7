"""A delete reports what the service's answer says: a 2xx that does not say deleted is an error,
and a DELETE whose lost answer is followed by a 404 to its retry is done, for `conv delete` and
for `api -X DELETE` alike (one mechanism)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from tests.loopback import JSONService, on_loopback, running, url_of

from .both_backends import TOKEN, Remote


class Deleting(JSONService):
    """Deletes each id once. `conv_lost`: the first DELETE is carried out, then the connection
    is dropped without an answer. `conv_kept`: a 200 that says `deleted: false`."""

    gone: ClassVar[set[str]] = set()
    lock = threading.Lock()

    def do_DELETE(self) -> None:
        id = self.path.rsplit("/", 1)[-1]
        with self.lock:
            first = id not in self.gone
            self.gone.add(id)
        if id == "conv_kept":
            self.send_json(200, {"id": id, "deleted": False})
        elif not first:
            self.send_json(404, {"error": {"type": "not_found_error", "message": "No such one"}})
        elif id == "conv_lost":
            self.close_connection = True  # done, and the answer is lost
        else:
            self.send_json(200, {"id": id, "deleted": True})


@pytest.fixture
def remote(tmp_path: Path) -> Iterator[Remote]:
    """The CLI pointed at a fresh Deleting service on loopback."""
    Deleting.gone = set()
    with running(on_loopback(Deleting)) as server:
        yield Remote(tmp_path, url_of(server), TOKEN)


def test_a_delete_answered_deleted_false_is_an_error_not_deleted_true(remote: Remote) -> None:
    result = remote.run("conv", "delete", "conv_kept", "--yes", "-o", "json")
    assert result.returncode == 1 and result.stdout == ""
    error = json.loads(result.stderr)["error"]
    assert "does not say it was deleted (deleted: false)" in error["message"]
    assert error["status"] == 200 and error["id"] == "conv_kept"


def test_api_delete_whose_answer_was_lost_and_retry_is_404_is_done_like_conv_delete(
    remote: Remote,
) -> None:
    by_api = remote.run("api", "-X", "DELETE", "/v1/conversations/conv_lost")
    assert by_api.returncode == 0, by_api.stderr
    assert "earlier attempt deleted it" in by_api.stderr
    Deleting.gone.discard("conv_lost")
    by_conv = remote.run("conv", "delete", "conv_lost", "--yes", "-o", "json")
    assert by_conv.returncode == 0, by_conv.stderr
    assert json.loads(by_conv.stdout) == {"id": "conv_lost", "deleted": True}


def test_api_delete_of_an_object_that_was_never_there_is_still_not_found(
    remote: Remote,
) -> None:
    Deleting.gone.add("conv_none")
    result = remote.run("api", "-X", "DELETE", "/v1/conversations/conv_none")
    assert result.returncode == 3
    assert "No such one" in result.stderr
