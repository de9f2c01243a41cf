"""Grading a class: discovery, lanes of worker processes, the journal, outputs, merging shards."""
