"""``python -m connector.cli`` is the ``pyq`` command."""

import sys

from .main import main

sys.exit(main())
