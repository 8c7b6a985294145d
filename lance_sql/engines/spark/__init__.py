"""Spark integration (optional extra ``lance-sql[spark]``)."""
