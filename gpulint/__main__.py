"""Entry point for ``python -m gpulint``."""

import sys

from gpulint.frontend.cli import main

sys.exit(main())
