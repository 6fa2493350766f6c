"""``python -m evalsuite.serving``: ``evalsuite serve`` on its own."""

import sys

from evalsuite.commands.serve import main

sys.exit(main())
