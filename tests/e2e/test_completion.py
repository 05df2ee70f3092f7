"""Shell completion of values through the installed script, as bash, zsh and fish call it:
output formats, profile names, config keys, and ids read from the local database. Each
behaviour once (every shell's script: in-process, tests/cli/test_completion.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from convrisk.api_client.resources import RISK_PROFILES
from convrisk.cli.output.resource_kinds import CONVERSATIONS

from .console import CONVRISK, SAFETY_TIMEOUT, db_of, run


def complete(env: dict[str, str], line: str) -> list[str]:
    """What bash is offered for the last word of `line` (an empty last word after a space)."""
    words = line.split(" ")
    result = subprocess.run(
        [str(CONVRISK)],
        env={
            **env,
            "_CONVRISK_COMPLETE": "complete_bash",
            "COMP_WORDS": line,
            "COMP_CWORD": str(len(words) - 1),
        },
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=SAFETY_TIMEOUT,
        start_new_session=True,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    return [word for word in result.stdout.split("\n") if word]


def test_output_formats_complete(env: dict[str, str]) -> None:
    assert complete(env, "convrisk conv list -o ") == ["table", "json", "jsonl", "csv", "id"]
    assert complete(env, "convrisk risk get rp_1 --output js") == ["json", "jsonl"]


def test_profile_names_complete_from_the_config_file(env: dict[str, str]) -> None:
    for profile in ("staging", "ops", "prod"):
        assert run(env, "config", "set", "--profile", profile, "timeout", "5").returncode == 0
    # `default` needs no table in the file: it is offered too.
    assert complete(env, "convrisk --profile ") == ["staging", "ops", "prod", "default"]
    assert complete(env, "convrisk conv list --profile p") == ["prod"]  # after the command too
    assert complete(env, "convrisk config show --profile o") == ["ops"]
    assert complete(env, "convrisk config use ") == ["staging", "ops", "prod", "default"]
    assert complete(env, "convrisk config use d") == ["default"]


def test_default_is_offered_without_a_config_file(env: dict[str, str]) -> None:
    assert complete(env, "convrisk --profile ") == ["default"]
    assert complete(env, "convrisk config use ") == ["default"]


def test_the_known_profile_types_complete(env: dict[str, str]) -> None:
    known = list(RISK_PROFILES.field("profile_type").known)
    assert known == ["conservative", "moderate", "aggressive"]
    assert complete(env, "convrisk risk list --profile-type ") == known
    assert complete(env, "convrisk risk create --customer-id c --profile-type m") == ["moderate"]
    assert complete(env, "convrisk risk update rp_1 --profile-type a") == ["aggressive"]


def test_option_choices_complete(env: dict[str, str]) -> None:
    assert complete(env, "convrisk conv import f.csv --format ") == ["jsonl", "csv"]
    assert complete(env, "convrisk risk import - --format c") == ["csv"]
    assert complete(env, "convrisk serve --log-format ") == ["text", "json"]


def test_a_config_value_completes_when_the_key_has_choices(env: dict[str, str]) -> None:
    assert complete(env, "convrisk config set output ") == ["table", "json", "jsonl", "csv", "id"]
    assert complete(env, "convrisk config set output js") == ["json", "jsonl"]
    assert complete(env, "convrisk config set timeout ") == []
    assert complete(env, "convrisk config set protected ") == ["true", "false"]
    assert complete(env, "convrisk config set --profile prod read_only t") == ["true"]


def test_fields_complete_name_by_name_after_the_commas(env: dict[str, str]) -> None:
    conv_fields = [column.key for column in CONVERSATIONS.columns]
    assert complete(env, "convrisk conv list --fields ") == conv_fields
    assert complete(env, "convrisk conv get conv_1 --fields id,c") == [
        "id,contact_id",
        "id,created_at",
    ]
    # a name already given is not offered again
    assert "id,contact_id,id" not in complete(env, "convrisk conv list --fields id,contact_id,")
    assert complete(env, "convrisk risk list --fields sc") == ["score"]
    assert complete(env, "convrisk conv delete conv_1 --fields ") == ["id", "deleted"]


def test_config_keys_complete(env: dict[str, str]) -> None:
    assert complete(env, "convrisk config get ") == [
        "base_url",
        "token",
        "db",
        "output",
        "timeout",
        "max_retries",
        "page_size",
        "max_response_mb",
        "allow_insecure_http",
        "protected",
        "read_only",
    ]
    assert complete(env, "convrisk config set max") == ["max_retries", "max_response_mb"]


def test_ids_complete_from_the_local_database_newest_first(env: dict[str, str], store: Any) -> None:
    convs = [store.conversations.create({"contact_id": f"c_{i}"})["id"] for i in range(60)]
    profile = store.risk_profiles.create(
        {"customer_id": "c", "profile_type": "t", "score": 1, "details": {}}
    )["id"]
    offered = complete(env, "convrisk conv get ")
    assert offered == convs[::-1][:50]  # at most 50
    assert complete(env, f"convrisk conv delete {convs[7]}") == [convs[7]]
    prefix = convs[0][:-3]  # ids made in the same millisecond share more than this
    assert complete(env, f"convrisk conv update {prefix}") == [
        c for c in convs[::-1] if c.startswith(prefix)
    ]
    assert complete(env, "convrisk conv list --starting-after conv_zz") == []
    assert complete(env, "convrisk risk update ") == [profile]


def test_contact_ids_complete_from_the_local_database_once_each(
    env: dict[str, str], store: Any
) -> None:
    for contact in ("c_10", "c_2", "c_10", "c_11", "d_1"):
        store.conversations.create({"contact_id": contact})
    store.conversations.create({"group_id": "c_group"})
    assert complete(env, "convrisk conv list --contact-id c_1") == ["c_10", "c_11"]
    assert complete(env, "convrisk conv list --contact-id ") == ["c_10", "c_11", "c_2", "d_1"]
    remote = {**env, "CONVRISK_BASE_URL": "http://127.0.0.1:9", "CONVRISK_TOKEN": "t" * 20}
    assert complete(remote, "convrisk conv list --contact-id c") == []


def test_ids_follow_db_given_before_or_after_the_command(
    env: dict[str, str], store: Any, tmp_path: Path
) -> None:
    store.conversations.create({"contact_id": "default db"})
    other = tmp_path / "other.db"
    made = run(env, "--db", str(other), "conv", "create", "--contact-id", "c", "-o", "id")
    conv_id = made.stdout.strip()
    assert complete(env, f"convrisk --db {other} conv get ") == [conv_id]
    assert complete(env, f"convrisk conv get --db {other} ") == [conv_id]


def test_completion_reads_the_database_without_creating_or_changing_it(
    env: dict[str, str], tmp_path: Path
) -> None:
    assert complete(env, "convrisk conv get ") == []
    assert not db_of(env).exists()  # no database made by a TAB
    assert complete(env, f"convrisk conv get --db {tmp_path / 'nope.db'} ") == []
    assert not (tmp_path / "nope.db").exists()


def test_a_remote_profile_offers_no_ids(env: dict[str, str], store: Any) -> None:
    store.conversations.create({"contact_id": "c"})
    remote = {**env, "CONVRISK_BASE_URL": "http://127.0.0.1:9", "CONVRISK_TOKEN": "t" * 20}
    assert complete(remote, "convrisk conv get ") == []  # no request sent for a TAB


def test_id_completion_imports_neither_the_store_nor_the_models(
    env: dict[str, str], store: Any
) -> None:
    store.conversations.create({"contact_id": "c"})
    probe = (
        "import atexit, sys\n"
        "atexit.register(lambda: print(sorted({'convrisk.local_backend.backend',"
        " 'convrisk.api_client.models', 'httpx', 'rich'} & set(sys.modules)), file=sys.stderr))\n"
        "from convrisk.cli.app import main\n"
        "main(['conv', 'get', 'conv_'])\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe],
        env={
            **env,
            "_CONVRISK_COMPLETE": "complete_bash",
            "COMP_WORDS": "convrisk conv get conv_",
            "COMP_CWORD": "3",
        },
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=SAFETY_TIMEOUT,
    )
    assert result.stdout.startswith("conv_"), result.stderr
    assert result.stderr.strip().splitlines()[-1] == "[]"


def test_each_shell_gets_a_completion_script(env: dict[str, str]) -> None:
    shell = "bash"  # zsh and fish too, in-process
    result = subprocess.run(
        [str(CONVRISK)],
        env={**env, "_CONVRISK_COMPLETE": f"source_{shell}"},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=SAFETY_TIMEOUT,
    )
    assert result.returncode == 0
    assert f"_CONVRISK_COMPLETE=complete_{shell}" in result.stdout


def test_api_paths_complete_then_local_ids_under_them(env: dict[str, str], store: Any) -> None:
    conv = store.conversations.create({"contact_id": "c_1"})["id"]
    assert complete(env, "convrisk api ") == ["/v1/conversations", "/v1/risk-profiles"]
    assert complete(env, "convrisk api /v1/r") == ["/v1/risk-profiles"]
    assert complete(env, "convrisk api /v1/conversations/") == [f"/v1/conversations/{conv}"]
    assert complete(env, "convrisk api /v1/risk-profiles/") == []
