"""`python -m ssmbench`: the command line (ssmbench.cli) of this Python, which the workflow's
rules run so that they need no `ssmbench` on PATH."""

import sys

from ssmbench.cli import main

sys.exit(main())
