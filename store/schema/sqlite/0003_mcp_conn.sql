-- Spotter's store, version 3 (SQLite): the MCP connection (its
-- Mcp-Session-Id) that a session of kind mcp belongs to; the same as
-- schema/postgres/0003_mcp_conn.sql. The sessions of one connection are
-- owned, and adopted, together, and a request of the connection goes to
-- their owner.
ALTER TABLE sessions ADD COLUMN conn TEXT NOT NULL DEFAULT '';
CREATE INDEX sessions_by_conn ON sessions (conn, created_us) WHERE conn <> '';
