"""Entry point for ``python -m gpulint``."""

import sys

from gpulint.cli import main

sys.exit(main())
