-- Title: time-range query on year/month/day partitions of a timestamp
-- Shows: `clicks` is partitioned by year(ts), month(ts), day(ts). A range of
--   three days reads only the day partitions that overlap it.
-- Tables: clicks (lance-sql demo data)
-- Prunes: clicks
-- Expected: clicks between 2025-12-01 00:00 (inclusive) and 2025-12-04 00:00
--   (exclusive), grouped by url.
SELECT url,
       count(*) AS clicks,
       min(ts) AS first_click,
       max(ts) AS last_click
FROM clicks
WHERE ts >= TIMESTAMP '2025-12-01 00:00:00' AND ts < TIMESTAMP '2025-12-04 00:00:00'
GROUP BY url
ORDER BY url;
