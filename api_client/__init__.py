"""The convrisk API client: record types, errors, the Backend protocol and the Client facade.

Records are plain dicts typed with TypedDict (`api_client.records`): what the service sent.
Importing this package is light: every public name below is imported on first use (PEP 562), so
`from api_client import __version__` costs nothing, and the remote backend (httpx) lives in
`api_client.remote.http`, imported only when a remote base_url is used.
"""

from __future__ import annotations

from importlib import import_module

# Not `typing.TYPE_CHECKING`: importing typing costs more than `convrisk --version` may take,
# and this module is all that `--version` imports (cli/__main__.py). Type checkers treat any
# name `TYPE_CHECKING` as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from convrisk.api_client.client import Client
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
    from convrisk.api_client.protocol import Backend
    from convrisk.api_client.record_types import Conversation, RiskProfile
    from convrisk.api_client.records import Deleted, Record

# The one place the version is written (pyproject.toml reads it without importing the package).
__version__ = "0.1.0"

# Each public name and the submodule that defines it.
_LAZY = {
    "Client": "client",
    "APIConnectionError": "errors",
    "APIError": "errors",
    "APITimeoutError": "errors",
    "AuthenticationError": "errors",
    "ConvriskError": "errors",
    "InvalidRequestError": "errors",
    "NotFoundError": "errors",
    "PermissionDeniedError": "errors",
    "ServiceError": "errors",
    "Conversation": "record_types",
    "Deleted": "records",
    "Page": "page",
    "Record": "records",
    "RiskProfile": "record_types",
    "Backend": "protocol",
}


def __getattr__(name: str) -> Any:
    """Import a public name's submodule on first use, then keep the name here."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "APIConnectionError",
    "APIError",
    "APITimeoutError",
    "AuthenticationError",
    "Backend",
    "Client",
    "Conversation",
    "ConvriskError",
    "Deleted",
    "InvalidRequestError",
    "NotFoundError",
    "Page",
    "PermissionDeniedError",
    "Record",
    "RiskProfile",
    "ServiceError",
    "__version__",
]
