"""``python -m evalsuite.serving``: ``evalsuite serve`` on its own."""

import sys

from evalsuite.serving.cli import main

sys.exit(main())
