import sys

from evalsuite.cli import main

sys.exit(main())
