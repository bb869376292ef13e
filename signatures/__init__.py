"""The shipped signature pack (data files; see docs/ledger.md)."""
