"""The command line's options: their value parsers, their table and the argparse parser built from it.

dcgm_collector.config reads them into one typed Config; nothing here imports config.
"""
