-- Title: the life of a namespace in SQL: CREATE TABLE ... PARTITIONED BY, INSERT, INSERT OVERWRITE, DELETE, UPDATE, MERGE INTO
-- Shows: `daily` is created from three days of `events`, partitioned by day and
--   bucket[4] of id, in the session's warehouse (SET lance.warehouse = '/path',
--   or LOCATION '/path'). Each DML statement is one atomic __manifest commit and
--   returns the rows it changed (`count`, as DataFusion's DML does). INSERT
--   OVERWRITE replaces only the partitions its rows belong to (Spark's dynamic
--   partition overwrite): re-running a day's job replaces that day. MERGE INTO
--   updates matched rows and inserts the others.
-- Tables: events (lance-sql demo data, only read); daily (created here)
-- Expected: counts 136, 136, 116, 41, 201 on the demo data; the last statement
--   shows no US rows, 2025-12-01..2025-12-05 in full (12-04 amounts doubled, 12-05
--   inserted by the merge) and the few rows with id < 100 of later days. The
--   same statements in DuckDB give the same rows (tests/engines/test_sql_dml.py).
CREATE TABLE daily PARTITIONED BY (event_date, bucket(4, id)) AS
SELECT id, event_date, country, amount
FROM events
WHERE event_date BETWEEN DATE '2025-12-01' AND DATE '2025-12-03';

INSERT INTO daily
SELECT id, event_date, country, amount FROM events WHERE event_date = DATE '2025-12-04';

-- the 2025-12-04 job runs again: only that day's partitions are replaced
INSERT OVERWRITE daily
SELECT id, event_date, country, amount * 2 FROM events WHERE event_date = DATE '2025-12-04';

DELETE FROM daily WHERE country = 'US';

UPDATE daily SET amount = 0 WHERE amount < 10;

MERGE INTO daily AS t
USING (SELECT id, event_date, country, amount + 1 AS amount
       FROM events
       WHERE country <> 'US' AND (event_date = DATE '2025-12-05' OR id < 100)) AS s
ON t.id = s.id
WHEN MATCHED THEN UPDATE SET amount = s.amount
WHEN NOT MATCHED THEN INSERT (id, event_date, country, amount)
  VALUES (s.id, s.event_date, s.country, s.amount);

SELECT event_date,
       count(*) AS events,
       count(DISTINCT country) AS countries,
       round(sum(amount), 2) AS amount
FROM daily
GROUP BY event_date
ORDER BY event_date;
