"""``service.act``: the spec's action-based investigation module (it lives in ``service.reasoning.act``)."""

from service.reasoning.act import *  # noqa: F403
from service.reasoning.act import __all__ as __all__
