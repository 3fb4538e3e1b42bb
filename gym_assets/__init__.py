"""gym_assets: LLM-agent evaluation data plane as a Dagster asset graph."""
