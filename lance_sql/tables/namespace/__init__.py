"""Partitioned namespaces (lance-partitioning-spec): model, layout, read and write."""
