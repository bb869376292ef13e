"""What sigclass writes: findings, run tables, history, JSON Schemas and the HTML report."""
