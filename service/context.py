"""``service.context``: the spec's context-packet module (it lives in ``service.retrieval.context``)."""

from service.retrieval.context import *  # noqa: F403
from service.retrieval.context import __all__ as __all__
