"""The projector registry loads once, completely, even when several threads ask for it at the same time."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

# Run in a fresh interpreter: the registry is process-wide, and this test is about its very first load.
_CHILD = textwrap.dedent(
    """
    import importlib.abc, json, sys, threading, time

    class SlowGovernance(importlib.abc.MetaPathFinder):
        # Holds the first loader inside its imports long enough for a second thread to ask.
        def find_spec(self, name, path, target=None):
            if name == "projections.governance":
                time.sleep(0.3)
            return None

    sys.meta_path.insert(0, SlowGovernance())
    from projections import registry

    full = []
    first = threading.Thread(target=lambda: full.append(registry.projector_names()))
    first.start()
    time.sleep(0.1)  # the first thread is now inside the slow import
    second = registry.projector_names()
    first.join()
    print(json.dumps({"same": sorted(second) == sorted(full[0]), "second": sorted(second)}))
    """
)


def test_a_second_thread_waits_for_the_first_load_instead_of_seeing_half_the_projectors() -> None:
    out = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True, check=True, timeout=60)
    result = json.loads(out.stdout)
    assert result["same"], result
    assert {"items", "revisions", "governance", "grants", "history", "beliefs", "vectors"} <= set(result["second"])
