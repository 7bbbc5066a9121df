-- pg_cq 0.1 -> 0.2
-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION pg_cq UPDATE TO '0.2'" to load this file. \quit

-- pg_cq--0.2.sql is built from pg_cq--0.1.sql followed by this file (see
-- Makefile), so a new install and an upgraded one have the same objects.
-- Each change below says which issue item it belongs to.
