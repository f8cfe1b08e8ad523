"""Generated protobuf modules (see tools/gen_podresources.py)."""
