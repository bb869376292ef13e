"""The streaming scanner: reader, prefilter, triggers, per-source state and the scanner factory."""
