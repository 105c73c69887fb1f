"""Substrate: an event-sourced knowledge service on PostgreSQL. Every public name of the spec lives here."""

from service.beliefs.commands import *  # noqa: F403
from service.beliefs.flywheel import *  # noqa: F403
from service.domain.errors import *  # noqa: F403
from service.domain.items import *  # noqa: F403
from service.guard.secrets import *  # noqa: F403
from service.ingest.freshness import *  # noqa: F403
from service.ingest.lineage import *  # noqa: F403
from service.ingest.sources import *  # noqa: F403
from service.reasoning.act import *  # noqa: F403
from service.reasoning.eig import *  # noqa: F403
from service.reasoning.factuality import *  # noqa: F403
from service.reasoning.harness import *  # noqa: F403
from service.reasoning.interop import *  # noqa: F403
from service.reasoning.kg import *  # noqa: F403
from service.reasoning.reasoner import *  # noqa: F403
from service.retrieval.answer import *  # noqa: F403
from service.retrieval.context import *  # noqa: F403
from service.retrieval.multihop import *  # noqa: F403
from service.retrieval.retrieve import *  # noqa: F403
from service.search.ranking import *  # noqa: F403
from service.substrate import *  # noqa: F403
from service.teams.access import *  # noqa: F403
from service.teams.governance import *  # noqa: F403
from service.teams.spaces import *  # noqa: F403
