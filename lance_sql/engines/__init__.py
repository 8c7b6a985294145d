"""Layer 4, engines: the DataFusion and Spark integrations."""
