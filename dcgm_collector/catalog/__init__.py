"""What can be collected and what the operator asked for: DCGM's field table and the counters file."""
