"""The `sigclass` command: one module per group of commands around the shared app in `common`."""
