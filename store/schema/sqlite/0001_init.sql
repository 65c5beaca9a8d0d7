-- Spotter's store, version 1 (SQLite). schema/postgres/0001_init.sql is the
-- same logical schema: keep the two in step. Times are microseconds since
-- the Unix epoch (UTC); JSON payloads are text, NULL when empty.

CREATE TABLE sessions (
	id          TEXT    NOT NULL PRIMARY KEY,
	kind        TEXT    NOT NULL,
	title       TEXT    NOT NULL,
	status      TEXT    NOT NULL,
	config      TEXT,
	state       TEXT,
	url         TEXT    NOT NULL,
	step        INTEGER NOT NULL,
	error       TEXT    NOT NULL,
	created_us  INTEGER NOT NULL,
	updated_us  INTEGER NOT NULL,
	-- The last Seq handed out per stream; bumped in the same transaction
	-- as the insert, so sequences stay gap-free across processes.
	event_seq   INTEGER NOT NULL DEFAULT 0,
	message_seq INTEGER NOT NULL DEFAULT 0,
	call_seq    INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX sessions_by_created ON sessions (created_us, id);

CREATE TABLE events (
	session TEXT    NOT NULL REFERENCES sessions (id),
	seq     INTEGER NOT NULL,
	type    TEXT    NOT NULL,
	data    TEXT,
	time_us INTEGER NOT NULL,
	PRIMARY KEY (session, seq)
);

CREATE TABLE messages (
	session TEXT    NOT NULL REFERENCES sessions (id),
	seq     INTEGER NOT NULL,
	role    TEXT    NOT NULL,
	content TEXT,
	call_id TEXT    NOT NULL,
	time_us INTEGER NOT NULL,
	PRIMARY KEY (session, seq)
);

CREATE TABLE tool_calls (
	session    TEXT    NOT NULL REFERENCES sessions (id),
	id         TEXT    NOT NULL,
	ord        INTEGER NOT NULL, -- insertion order within the session
	step       INTEGER NOT NULL,
	name       TEXT    NOT NULL,
	input      TEXT,
	status     TEXT    NOT NULL,
	result     TEXT,
	created_us INTEGER NOT NULL,
	updated_us INTEGER NOT NULL,
	PRIMARY KEY (session, id)
);

CREATE TABLE approvals (
	id          TEXT    NOT NULL PRIMARY KEY,
	session     TEXT    NOT NULL REFERENCES sessions (id),
	call_id     TEXT    NOT NULL,
	idx         INTEGER NOT NULL,
	rule        TEXT    NOT NULL,
	reason      TEXT    NOT NULL,
	request     TEXT,
	status      TEXT    NOT NULL,
	decision    TEXT,
	decided_by  TEXT    NOT NULL,
	created_us  INTEGER NOT NULL,
	deadline_us INTEGER,
	decided_us  INTEGER
);
CREATE INDEX approvals_by_session ON approvals (session, created_us);
CREATE INDEX approvals_by_status ON approvals (status, created_us);

CREATE TABLE audit (
	id      INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
	time_us INTEGER NOT NULL,
	actor   TEXT    NOT NULL,
	action  TEXT    NOT NULL,
	session TEXT    NOT NULL, -- '' for entries of no session; not a foreign key
	subject TEXT    NOT NULL,
	detail  TEXT
);
CREATE INDEX audit_by_session ON audit (session, id);

CREATE TABLE shots (
	session  TEXT    NOT NULL REFERENCES sessions (id),
	name     TEXT    NOT NULL,
	frame_id TEXT    NOT NULL,
	step     INTEGER NOT NULL,
	bytes    INTEGER NOT NULL,
	time_us  INTEGER NOT NULL,
	PRIMARY KEY (session, name)
);
