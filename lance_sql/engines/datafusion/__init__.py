"""DataFusion integration: table providers, SQL functions and the SessionContext."""
