-- Title: one query over partitions of spec v1 and spec v2
-- Shows: `events` was written under spec v1 (day partitions) and, after
--   add_spec, under spec v2 (year + country). A date range reads both: v1
--   partitions outside the range are pruned by their dates, v2 partitions
--   (whole year 2025) all qualify and are filtered inside.
-- Tables: events (lance-sql demo data)
-- Prunes: events
-- Expected: the dates 2025-12-06..2025-12-09, with rows from both spec
--   versions (ids < 2000 come from v1, ids >= 2000 from v2).
SELECT event_date,
       count(*) AS events,
       sum(CASE WHEN id < 2000 THEN 1 ELSE 0 END) AS from_spec_v1,
       sum(CASE WHEN id >= 2000 THEN 1 ELSE 0 END) AS from_spec_v2
FROM events
WHERE event_date BETWEEN DATE '2025-12-06' AND DATE '2025-12-09'
GROUP BY event_date
ORDER BY event_date;
