"""Authoring the ledger: lint, same-stem examples, drafts of new signatures from unknown failures, markdown."""
