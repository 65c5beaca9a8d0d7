-- Spotter's store, version 2 (PostgreSQL): replicas of `spotter serve`
-- sharing this database, and which of them runs each session; the same
-- tables as schema/sqlite/0002_cluster.sql (one server uses them alone). Times are
-- microseconds since the Unix epoch, from the replicas' clocks.

-- Each replica renews its row's lease (expires_us) every third of its
-- lease; a replica whose lease lapsed is gone, and its sessions are
-- adopted by the others.
CREATE TABLE replicas (
	id         TEXT    NOT NULL PRIMARY KEY,
	addr       TEXT    NOT NULL, -- the base URL the other replicas forward to
	sessions   BIGINT  NOT NULL, -- sessions it runs (browsers open)
	capacity   BIGINT  NOT NULL, -- sessions it takes; 0: not said
	draining   BIGINT  NOT NULL, -- 1 while it drains: it takes no new sessions
	started_us BIGINT  NOT NULL,
	renewed_us BIGINT  NOT NULL,
	expires_us BIGINT  NOT NULL
);

-- The replica that runs a session's browser. owner is '' once released
-- (a replica that drained); epoch grows with every change of owner, so
-- that two replicas cannot both take a session over.
CREATE TABLE session_owners (
	session  TEXT    NOT NULL PRIMARY KEY REFERENCES sessions (id),
	owner    TEXT    NOT NULL,
	epoch    BIGINT  NOT NULL,
	since_us BIGINT  NOT NULL
);
CREATE INDEX session_owners_by_owner ON session_owners (owner);
