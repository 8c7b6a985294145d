"""Layer 5, the ``lance-sql`` command line."""
