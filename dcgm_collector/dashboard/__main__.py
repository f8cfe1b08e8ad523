"""``python -m dcgm_collector.dashboard``: the dashboard command on its own."""

import sys

from dcgm_collector.dashboard.generator import main

if __name__ == "__main__":
    sys.exit(main())
