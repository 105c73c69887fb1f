"""The facade: ``Substrate``, the item API of the spec, whose one write door every command appends through."""

from service.substrate.facade import OPERATOR_ENV, SecretPolicy, Substrate

__all__ = ["OPERATOR_ENV", "SecretPolicy", "Substrate"]
