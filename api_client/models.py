"""Resource models as the service returns them; unknown fields are kept."""

from __future__ import annotations

from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, field_validator, model_validator

from .params import MAX_DETAILS_DEPTH, exceeds_depth

# A timestamp as the service sent it: integer Unix seconds from our own service, but a remote one
# may send milliseconds or floats. Kept unchanged so JSON output carries the service's values.
Timestamp = int | float


class Resource(BaseModel):
    """Base of every returned object: extra fields kept, values as sent."""

    model_config = ConfigDict(extra="allow", defer_build=True)

    id: str

    @model_validator(mode="after")
    def _extras_not_too_deep(self) -> Resource:
        """Refuse unknown fields nested too deep to serialise later."""
        for name, value in (self.__pydantic_extra__ or {}).items():
            if exceeds_depth(value, MAX_DETAILS_DEPTH):
                raise ValueError(f"{name} nests more than {MAX_DETAILS_DEPTH} levels deep")
        return self

    def to_json_dict(self) -> dict[str, Any]:
        """The object as a JSON-ready dict, unknown fields included."""
        return self.model_dump(mode="json")


class Conversation(Resource):
    """A conversation with one contact or one group."""

    contact_id: str | None = None
    group_id: str | None = None
    pinned_message_id: str | None = None
    is_pinned: bool = False
    is_muted: bool = False
    last_active_at: Timestamp | None = None
    last_opened_at: Timestamp | None = None
    created_at: Timestamp
    archived_at: Timestamp | None = None


class RiskProfile(Resource):
    """The risk tolerance of one customer."""

    customer_id: str
    profile_type: str
    score: int | float
    details: dict[str, Any]
    created_at: Timestamp
    updated_at: Timestamp

    @field_validator("details")
    @classmethod
    def _details_not_too_deep(cls, value: dict[str, Any]) -> dict[str, Any]:
        """Refuse details nested too deep to serialise later (the input rule's limit)."""
        if exceeds_depth(value, MAX_DETAILS_DEPTH):
            raise ValueError(f"nests more than {MAX_DETAILS_DEPTH} levels deep")
        return value


class Deleted(BaseModel):
    """The answer to a delete: `{"id": ..., "deleted": true}`."""

    model_config = ConfigDict(extra="allow", defer_build=True)

    id: str
    deleted: bool = True

    def to_json_dict(self) -> dict[str, Any]:
        """The deletion as a JSON-ready dict."""
        return self.model_dump(mode="json")


ResourceT = TypeVar("ResourceT", bound=Resource)


class Page(BaseModel, Generic[ResourceT]):
    """One page of a list: `{"has_more": bool, "data": [...]}`."""

    model_config = ConfigDict(extra="allow", defer_build=True)

    has_more: bool
    data: list[ResourceT]
