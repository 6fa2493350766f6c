"""Run records: results.json per run, history.jsonl across runs, and the views built on them."""
