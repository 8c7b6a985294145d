-- Title: join of bucket[16] orders with bucket[8] customers (spec appendix F)
-- Shows: orders are bucketed by bucket[16](customer_id), customers by
--   bucket[8](id); since 8 divides 16 the join planner pairs order bucket b
--   with customer bucket b % 8 (a storage-partitioned join layout).
--   `lance-sql demo` prints whether execution actually used it.
-- Tables: orders, customers (lance-sql demo data)
-- Join: orders.customer_id = customers.id
-- Expected: one row per customer country; the counts add up to the orders
--   whose customer exists (orders of unknown customers drop out of the join).
SELECT c.country,
       count(*) AS orders,
       round(sum(o.total), 2) AS revenue
FROM orders o
JOIN customers c ON o.customer_id = c.id
GROUP BY c.country
ORDER BY c.country;
