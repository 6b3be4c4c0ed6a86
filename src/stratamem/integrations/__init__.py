"""Adapters that let agent frameworks use a stratamem session as their memory (each needs its framework)."""
