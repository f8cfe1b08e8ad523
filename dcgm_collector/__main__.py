"""``python -m dcgm_collector``: the dcgm-collector command."""

from dcgm_collector.cli import run

if __name__ == "__main__":
    run()
