"""Post-mortem over run directories: discovery, layouts, per-source scans, assembly, cascades, summary, parallelism."""
