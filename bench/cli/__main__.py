"""`python -m bench.cli`: the `dprates` command line."""

import sys

from bench.cli import main

sys.exit(main())
