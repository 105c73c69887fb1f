"""Substrate: an event-sourced knowledge service on PostgreSQL. Every public name of the spec lives here."""

from service.access import *  # noqa: F403
from service.act import *  # noqa: F403
from service.answer import *  # noqa: F403
from service.belief import *  # noqa: F403
from service.context import *  # noqa: F403
from service.eig import *  # noqa: F403
from service.embedding import *  # noqa: F403
from service.errors import *  # noqa: F403
from service.factuality import *  # noqa: F403
from service.flywheel import *  # noqa: F403
from service.freshness import *  # noqa: F403
from service.governance import *  # noqa: F403
from service.harness import *  # noqa: F403
from service.ingest import *  # noqa: F403
from service.interop import *  # noqa: F403
from service.items import *  # noqa: F403
from service.kg import *  # noqa: F403
from service.lineage import *  # noqa: F403
from service.multihop import *  # noqa: F403
from service.reasoner import *  # noqa: F403
from service.retrieve import *  # noqa: F403
from service.security import *  # noqa: F403
from service.spaces import *  # noqa: F403
from service.substrate import *  # noqa: F403
