-- The store's 64-bit hash of a group is made from the group's key hash h (session 34:
-- cq_store_key_hash), which every row the store hashes carries, rather than by hashing
-- the keys a second time.  Groups whose h is equal (hash_record collides, as 32-bit
-- hashes do among some 10^5 keys) then share one slot of the group table and one chain,
-- where before they practically never did: batch 0 puts them without lookups, later
-- batches must find each by its keys along the chain, and every group stays apart from
-- the others.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_cq;
\i sql/include/helpers.sql

-- keys whose key hash collides with another key's: hash_record(ROW(k)) of one int key is
-- hashint4(k), as cq_store_set_h computes it
CREATE TABLE hc_keys AS
  SELECT k FROM (SELECT g AS k, count(*) OVER (PARTITION BY hashint4(g)) AS c
                   FROM generate_series(1, 300000) g) s WHERE c > 1;
SELECT count(*) >= 4 AS colliding_keys,
       count(DISTINCT hash_record(ROW(k))) < count(*) AS shared_hashes
  FROM hc_keys;
-- and a few keys around them that do not collide
INSERT INTO hc_keys SELECT g FROM generate_series(1, 50) g;

CREATE TABLE hc_src (k int, v numeric);
INSERT INTO hc_src SELECT k, k % 97 + r FROM hc_keys, generate_series(1, 3) r;
CREATE VIEW hc_oracle AS
  SELECT k, count(*) AS n, sum(v) AS s, max(v) AS m, avg(v) AS a FROM hc_src GROUP BY k;
SELECT cq.create_query('hc', pg_get_viewdef('hc_oracle'), output_mode => 'update',
                       "trigger" => 'available_now', state_storage => 'memory');

-- batch 0: every group put, colliding ones into one chain
CALL cq.run('hc');
SELECT mismatches('hc', 'TABLE hc_oracle') AS batch0;
SELECT state_rows = (SELECT count(DISTINCT k) FROM hc_keys) AS every_group FROM cq.state_store_info('hc');

-- a later batch changes one key of each colliding pair only, then the other: each
-- found along its chain, the other left as it was
INSERT INTO hc_src SELECT k, 1000 FROM (SELECT k, row_number() OVER (PARTITION BY hashint4(k) ORDER BY k) AS i
                                           FROM hc_keys WHERE k > 50) s WHERE i = 1;
CALL cq.run('hc');
SELECT mismatches('hc', 'TABLE hc_oracle') AS batch1;
INSERT INTO hc_src SELECT k, 2000 FROM (SELECT k, row_number() OVER (PARTITION BY hashint4(k) ORDER BY k) AS i
                                           FROM hc_keys WHERE k > 50) s WHERE i > 1;
CALL cq.run('hc');
SELECT mismatches('hc', 'TABLE hc_oracle') AS batch2;

-- every group changed, half of them twice in the batch's rows
INSERT INTO hc_src SELECT k, 3 FROM hc_keys;
INSERT INTO hc_src SELECT k, 4000 FROM hc_keys WHERE k % 2 = 0;
CALL cq.run('hc');
SELECT mismatches('hc', 'TABLE hc_oracle') AS batch3;
SELECT state_rows = (SELECT count(DISTINCT k) FROM hc_keys) AS every_group_apart
  FROM cq.state_store_info('hc');

SELECT cq.drop_query('hc', drop_target => true);
DROP VIEW hc_oracle;
DROP TABLE hc_src, hc_keys;
