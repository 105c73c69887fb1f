"""The administration routes' request and response models."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from service.http.models import In, Name

__all__ = [
    "AccessIn",
    "AccessList",
    "AccessOut",
    "AccessRevokeIn",
    "ApproverIn",
    "ApproverList",
    "ApproverOut",
    "Granted",
    "Revoked",
]


class AccessIn(In):
    """Grant ``principal`` ``mode`` on ``scope`` (admin: it may then grant and revoke there too)."""

    principal: Name
    scope: Name
    mode: Literal["read", "write", "readwrite", "admin"] = "readwrite"


class AccessRevokeIn(In):
    """Revoke every grant of ``principal`` on ``scope``."""

    principal: Name
    scope: Name


class ApproverIn(In):
    """Make ``who`` an approver of promotions into ``scope`` (or, to revoke, no longer one)."""

    who: Name
    scope: Name


class AccessOut(BaseModel):
    principal: str
    scope: str
    mode: Literal["read", "write", "readwrite", "admin"]
    seq: int


class AccessList(BaseModel):
    """The grants on the scopes the caller administers, and the caller's own."""

    grants: list[AccessOut]
    as_of: int | None = None  # the log position read, when the request named one


class ApproverOut(BaseModel):
    scope: str
    who: str
    by: str
    since_seq: int
    bootstrap: bool


class ApproverList(BaseModel):
    """The live approvers of the scopes the caller administers, and of the scopes the caller approves into."""

    approvers: list[ApproverOut]
    as_of: int | None = None  # the log position read, when the request named one


class Granted(BaseModel):
    """The log position of the grant's event."""

    seq: int


class Revoked(BaseModel):
    """Whether there was something to revoke, and the log position after the call."""

    revoked: bool
    seq: int
