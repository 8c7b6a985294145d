"""Layer 2, tables: single Lance datasets and partitioned namespaces (model, read, write)."""
