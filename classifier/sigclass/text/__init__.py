"""Text of one log line: the worker-prefix table, line splitting, timestamps and masking."""
