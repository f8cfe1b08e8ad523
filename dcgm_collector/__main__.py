"""``python -m dcgm_collector``: the dcgm-collector command."""

import sys

from dcgm_collector.cli import main

if __name__ == "__main__":
    sys.exit(main())
