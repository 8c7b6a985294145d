-- Title: partition pruning across two spec versions (spec appendix D)
-- Shows: an equality filter on event_date and country is projected through
--   both partition specs of `events`: v1 identity(event_date) keeps only the
--   2025-12-10 partition, v2 year(event_date)+identity(country) keeps only
--   year=2025/country=US. EXPLAIN shows partition_tables=2/N.
-- Tables: events (lance-sql demo data)
-- Prunes: events
-- Expected: every row has event_date 2025-12-10 and country US; the same rows
--   as the query over all partitions (tests/test_sql_examples.py checks both).
SELECT *
FROM events
WHERE event_date = DATE '2025-12-10' AND country = 'US'
ORDER BY id;
