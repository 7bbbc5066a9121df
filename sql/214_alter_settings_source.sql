-- cq.alter_query and the settings a query's batches run with (session 42).
-- A new query text before the first batch (a new query, or after
-- cq.reset, which empties the target) takes the alterer's TimeZone and
-- settings, as a new query its creator's: no value was computed under the
-- old ones.  After a batch they stay: the state's and the target's keys
-- were computed under them, and a key computed under others would be
-- another group.  Before, a text replaced before batch 0 kept the settings
-- recorded with the text it replaced.
-- And cq.alter_query's source option (SPEC §1: cq.alter_query changes
-- options): refused as the other options the state depends on, unless it
-- names the stream the query reads; before session 42 there was no such
-- argument ("function does not exist").
-- As an unprivileged role.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_cq;
\i sql/include/helpers.sql
SELECT pause_others();
CREATE ROLE pin214_user;
CREATE SCHEMA pin214 AUTHORIZATION pin214_user;
SET ROLE pin214_user;
CREATE TABLE pin214.src (ts timestamptz, v int);
CREATE TABLE pin214.other (ts timestamptz, v int);
INSERT INTO pin214.src VALUES ('2026-01-02 20:00+00', 1);
CREATE VIEW pin214.pinned AS
  SELECT timezone, (SELECT s FROM unnest(settings) s WHERE s LIKE 'DateStyle=%') AS datestyle
    FROM cq.queries WHERE schema = 'pin214' AND name = 'days';

-- created under DateStyle 'SQL, DMY' in Tokyo
SET DateStyle = 'SQL, DMY';
SET TimeZone = 'Asia/Tokyo';
SELECT cq.create_query('days', 'SELECT ts::date::text AS day, count(*) AS n FROM pin214.src GROUP BY 1',
  output_mode => 'update', "trigger" => 'available_now', target => 'pin214.days') IS NOT NULL AS created;
SELECT * FROM pin214.pinned;

-- replaced before batch 0 by a session in ISO and UTC: the new text's settings are its alterer's
SET DateStyle = 'ISO, MDY';
SET TimeZone = 'UTC';
SELECT cq.alter_query('pin214.days',
  query => 'SELECT ts::date::text AS day, count(*) AS n FROM pin214.src WHERE v > 0 GROUP BY 1') IS NOT NULL AS altered;
SELECT * FROM pin214.pinned;
-- batch 0 by a session of other settings: the alterer's day, 2026-01-02 in UTC (Tokyo: 01/03)
SET DateStyle = 'German';
SET TimeZone = 'Asia/Tokyo';
SET cq.run_in_worker = off;
CALL cq.run('pin214.days');
SELECT * FROM pin214.days;

-- changed after a batch (a filter): the settings stay, the group stays one
SELECT cq.alter_query('pin214.days',
  query => 'SELECT ts::date::text AS day, count(*) AS n FROM pin214.src WHERE v > -1 GROUP BY 1') IS NOT NULL AS altered;
SELECT * FROM pin214.pinned;
INSERT INTO pin214.src VALUES ('2026-01-02 21:00+00', 0);
CALL cq.run('pin214.days');
SELECT * FROM pin214.days;

-- after cq.reset (target emptied, no batch): a new text takes the alterer's again
SELECT cq.reset('pin214.days') IS NOT NULL AS reset;
SELECT cq.alter_query('pin214.days',
  query => 'SELECT ts::date::text AS day, count(*) AS n FROM pin214.src GROUP BY 1') IS NOT NULL AS altered;
SELECT * FROM pin214.pinned;
CALL cq.run('pin214.days');
SELECT * FROM pin214.days;
-- options alone change no settings (cq.reset takes the caller's, session 43: sql/221)
SELECT cq.reset('pin214.days') IS NOT NULL AS reset;
SET DateStyle = 'ISO, MDY';
SELECT cq.alter_query('pin214.days', max_rows_per_trigger => 10) IS NOT NULL AS altered;
SELECT * FROM pin214.pinned;
RESET DateStyle; RESET TimeZone;

-- the source option
SELECT cq.alter_query('pin214.days', source => 'pin214.other');
SELECT sqlstate_of($$SELECT cq.alter_query('pin214.days', source => 'pin214.other')$$);
-- naming the stream it reads changes nothing
SELECT cq.alter_query('pin214.days', source => 'pin214.src', "trigger" => '1 hour') IS NOT NULL AS same_source;
SELECT "trigger" FROM cq.queries WHERE schema = 'pin214' AND name = 'days';
SELECT sqlstate_of($$SELECT cq.alter_query('pin214.days', source => 'pin214.src, pin214.other')$$);
SELECT sqlstate_of($$SELECT cq.alter_query('pin214.days', source => 'pin214.nothere')$$);
-- as ALTER TABLE target SET (cq.source = ...)
SELECT sqlstate_of($$ALTER TABLE pin214.days SET (cq.source = 'pin214.other')$$);
SELECT sqlstate_of($$ALTER TABLE pin214.days SET (cq.source = 'pin214.src')$$);
-- a join of two streams: both, in either order, change nothing; one is a change
CREATE TABLE pin214.r (k int, t timestamptz);
CREATE TABLE pin214.l (k int, t timestamptz);
SELECT cq.create_query('j', 'SELECT l.k FROM pin214.l l JOIN pin214.r r ON l.k = r.k AND l.t BETWEEN r.t - interval ''1 minute'' AND r.t',
  source => 'pin214.l, pin214.r', event_time => 'l.t, r.t', watermark => '1 minute, 1 minute',
  "trigger" => 'available_now', target => 'pin214.j') IS NOT NULL AS created;
SELECT sqlstate_of($$SELECT cq.alter_query('pin214.j', source => 'pin214.r, pin214.l')$$);
SELECT sqlstate_of($$SELECT cq.alter_query('pin214.j', source => 'pin214.l')$$);

RESET ROLE;
SELECT cq.drop_query('pin214.j');
SELECT cq.drop_query('pin214.days');
DROP SCHEMA pin214 CASCADE;
DROP ROLE pin214_user;
