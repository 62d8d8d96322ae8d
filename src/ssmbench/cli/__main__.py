"""`python -m ssmbench.cli`: the command line, as `ssmbench` runs it (train --fast-malloc
re-executes itself this way)."""

import sys

from ssmbench.cli import main

sys.exit(main())
