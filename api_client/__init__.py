"""The convrisk API client: models, errors, the Backend protocol and the Client facade.

Importing this package stays light: the remote backend (httpx) lives in `api_client.http` and is
imported only when a remote base_url is used.
"""

from .client import Client
from .errors import (
    APIConnectionError,
    APIError,
    APITimeoutError,
    AuthenticationError,
    ConvriskError,
    InvalidRequestError,
    NotFoundError,
    ServiceError,
)
from .models import Conversation, Deleted, Page, RiskProfile
from .protocol import Backend

__version__ = "0.1.0"

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
    "RiskProfile",
    "ServiceError",
    "__version__",
]
