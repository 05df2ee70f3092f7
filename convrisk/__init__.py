"""convrisk: the library (`from convrisk import Client`, docs/guide/python.md), the command-line
tool (`convrisk.cli`), the client and contract (`convrisk.api_client`) and the local store and
sandbox server (`convrisk.local_backend`).

The three packages live in the repository's top-level folders `cli/`, `api_client/` and
`local_backend/`; this folder links them under one name (see docs/design/command-line.md,
"Packages, one namespace, layers"). Importing `convrisk` loads none of them: each public name
below is imported on first use (PEP 562), and `Client` loads no HTTP client and no database
until `Client.remote` or `Client.local` makes one.
"""

from __future__ import annotations

# Not `typing.TYPE_CHECKING`: `import convrisk` imports nothing, typing included. Type checkers
# treat any name `TYPE_CHECKING` as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from convrisk.api_client import __version__
    from convrisk.api_client.errors import (
        APIConnectionError,
        APIError,
        APITimeoutError,
        AuthenticationError,
        ConvriskError,
        InvalidRequestError,
        NotFoundError,
        PermissionDeniedError,
        ServiceError,
    )
    from convrisk.api_client.page import Page
    from convrisk.api_client.record_types import Conversation, RiskProfile
    from convrisk.api_client.records import Deleted
    from convrisk.library import Client

# Each public name and the module that defines it.
_LAZY = {
    "Client": "convrisk.library",
    "APIConnectionError": "convrisk.api_client.errors",
    "APIError": "convrisk.api_client.errors",
    "APITimeoutError": "convrisk.api_client.errors",
    "AuthenticationError": "convrisk.api_client.errors",
    "ConvriskError": "convrisk.api_client.errors",
    "InvalidRequestError": "convrisk.api_client.errors",
    "NotFoundError": "convrisk.api_client.errors",
    "PermissionDeniedError": "convrisk.api_client.errors",
    "ServiceError": "convrisk.api_client.errors",
    "Conversation": "convrisk.api_client.record_types",
    "RiskProfile": "convrisk.api_client.record_types",
    "Deleted": "convrisk.api_client.records",
    "Page": "convrisk.api_client.page",
    "__version__": "convrisk.api_client",
}


def __getattr__(name: str) -> Any:
    """Import a public name's module on first use, then keep the name here."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "APIConnectionError",
    "APIError",
    "APITimeoutError",
    "AuthenticationError",
    "Client",
    "Conversation",
    "ConvriskError",
    "Deleted",
    "InvalidRequestError",
    "NotFoundError",
    "Page",
    "PermissionDeniedError",
    "RiskProfile",
    "ServiceError",
    "__version__",
]
