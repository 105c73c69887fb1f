"""``python -m service.cli``: the ``substrate`` command."""

import sys

from service.cli.main import main

sys.exit(main())
