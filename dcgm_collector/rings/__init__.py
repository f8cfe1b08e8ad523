"""The sample stores: fixed rings of rows, the event ring, and the store for series that come and go, all read
lock-free through the extension's C code."""
