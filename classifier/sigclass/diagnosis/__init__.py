"""Differential diagnosis across runs: which facts separate failing units from clean ones, and what the ledger's probes say."""
