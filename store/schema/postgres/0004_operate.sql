-- Spotter's store, version 4 (PostgreSQL): what operating several replicas for
-- long needs; the same tables as schema/sqlite/0004_operate.sql. Times are
-- microseconds since the Unix epoch, from the replicas' clocks.

-- The process that holds a replica id: a second process started with the
-- same id finds the lease held by another incarnation and is refused
-- while that lease runs.
ALTER TABLE replicas ADD COLUMN incarnation TEXT NOT NULL DEFAULT '';

-- Work that one replica at a time does for them all (retention), under a
-- lease its holder renews.
CREATE TABLE leases (
	name       TEXT    NOT NULL PRIMARY KEY,
	holder     TEXT    NOT NULL,
	expires_us BIGINT  NOT NULL
);

-- Sessions that retention deleted, whole: their requests answer 410 Gone
-- until the tombstone itself is pruned.
CREATE TABLE deleted_sessions (
	id         TEXT    NOT NULL PRIMARY KEY,
	deleted_us BIGINT  NOT NULL
);
CREATE INDEX deleted_sessions_by_time ON deleted_sessions (deleted_us);
