"""SQL written once for both SQL engines: listing, audit pages, console reads, the graph, transcripts, session rules, pruning, group commit.

Each function takes a connection (or a runner) and the engine's dialect from the
backend that calls it, and runs inside the transaction that backend supplies.
"""
