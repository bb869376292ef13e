"""The gotcha ledger: strict YAML, patterns, one signature per file, the loaded pack."""
