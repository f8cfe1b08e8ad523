"""The sample stores: fixed rings of rows, the event ring, read lock-free through the extension's C code."""
