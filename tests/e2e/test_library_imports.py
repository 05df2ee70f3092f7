"""The library loads only what a program uses: `import convrisk` nothing, `from convrisk import
Client` no HTTP client, terminal, command line, server or database until a backend is made."""

from __future__ import annotations

from .console import assert_loads_none_of

# What neither import may load (modules, or packages with any module of theirs).
HEAVY = {
    "httpx",
    "httpcore",
    "rich",
    "typer",
    "click",
    "uvicorn",
    "starlette",
    "pydantic",
    "pydantic_core",
    "sqlite3",
    "jq",
    "textual",
    "convrisk.cli",
    "convrisk.local_backend",
}


def test_importing_convrisk_loads_none_of_its_packages(env: dict[str, str]) -> None:
    assert_loads_none_of(
        env, "import convrisk\ncode = 0\n", HEAVY | {"convrisk.api_client", "typing"}
    )


def test_importing_the_client_loads_no_http_client_and_no_database(env: dict[str, str]) -> None:
    assert_loads_none_of(env, "from convrisk import Client\ncode = 0\n", HEAVY)


def test_a_local_client_loads_no_http_client(env: dict[str, str]) -> None:
    call = (
        "import os\nfrom convrisk import Client\n"
        "with Client.local(db=os.path.join(os.environ['HOME'], 'app.db')) as client:\n"
        "    client.conversations.create(contact_id='c_1')\n"
        "code = 0\n"
    )
    assert_loads_none_of(env, call, HEAVY - {"sqlite3", "convrisk.local_backend"})


def test_a_remote_client_loads_no_database_and_no_command_line(env: dict[str, str]) -> None:
    call = (
        "from convrisk import Client\n"
        "Client.remote('http://127.0.0.1:9', 'token').close()\n"
        "code = 0\n"
    )
    # httpx imports click, pygments and rich itself (its own command line, httpx._main) when
    # they are installed, as they are beside convrisk: not ours to keep out.
    assert_loads_none_of(env, call, HEAVY - {"httpx", "httpcore", "click", "rich"})


def test_a_profiles_client_loads_no_typer(env: dict[str, str]) -> None:
    call = "from convrisk import Client\nClient.from_profile().close()\ncode = 0\n"
    absent = {"typer", "rich", "httpx", "uvicorn", "starlette", "jq", "textual"}
    assert_loads_none_of(env, call, absent)
