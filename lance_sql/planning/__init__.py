"""Layer 3, planning: one predicate IR, partition pruning and storage-partitioned joins."""
