"""`python -m esac_kit`: the same command line as `esac-kit`."""

import sys

from esac_kit.cli import main

sys.exit(main())
