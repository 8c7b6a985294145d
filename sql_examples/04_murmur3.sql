-- Title: murmur3 hashing and bucket checks
-- Shows: murmur3 / murmur3_multi are the spec's partition hashes (Iceberg
--   compatible bytes); bucket[N] = abs(murmur3(x)) % N. The second statement
--   recomputes the bucket of every order and compares it to the bucket of the
--   partition table it is stored in (by construction they agree).
-- Tables: orders (lance-sql demo data)
-- Expected: statement 1 returns -629525236 and -1158136343 (design notes 2.1);
--   statement 2 returns 16 buckets whose counts add up to 4000 orders.
SELECT murmur3('US') AS murmur3_us,
       murmur3_multi('US', CAST(1 AS INT)) AS murmur3_multi_us_1;

SELECT abs(murmur3(customer_id)) % 16 AS bucket,
       count(*) AS orders,
       min(customer_id) AS min_customer,
       max(customer_id) AS max_customer
FROM orders
GROUP BY 1
ORDER BY 1;
