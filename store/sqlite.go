package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// sqliteBusyMillis is how long a writer waits for another process's write
// transaction on the same file before it fails.
const sqliteBusyMillis = 10000

// setWAL puts the database in WAL mode, which the file keeps for every
// later connection, and returns the mode it is in. Connections that switch
// a new file to WAL at the same moment (replicas starting together) can
// fail with SQLITE_BUSY at once, without the busy timeout's wait: SQLite
// does not wait for a lock while holding one another waiter needs. So the
// switch is made once per open, not by every connection, and tried again
// until the busy timeout has passed.
func setWAL(ctx context.Context, sdb *sql.DB) (string, error) {
	deadline := time.Now().Add(sqliteBusyMillis * time.Millisecond)
	pause := time.Millisecond
	for {
		var mode string
		err := sdb.QueryRowContext(ctx, "PRAGMA journal_mode=WAL").Scan(&mode)
		var se *sqlite.Error
		if err == nil || !errors.As(err, &se) || se.Code()&0xff != sqlite3.SQLITE_BUSY || time.Now().After(deadline) {
			return mode, err
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return "", context.Cause(ctx)
		case <-t.C:
		}
		pause = min(2*pause, 50*time.Millisecond)
	}
}

// openSQLite opens (creating if absent) the SQLite file at path in WAL mode
// with synchronous=FULL, so a commit is on disk when it returns.
func openSQLite(ctx context.Context, path string) (*db, error) {
	if path == ":memory:" || strings.HasPrefix(path, "file:") {
		return nil, fmt.Errorf("open sqlite %q: want a file path (an in-memory database is not durable; use a temporary file)", path)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	if fi, err := os.Stat(filepath.Dir(abs)); err != nil {
		return nil, fmt.Errorf("open sqlite %s: directory: %w", path, err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("open sqlite %s: %s is not a directory", path, filepath.Dir(abs))
	}
	// Create the file ourselves so that it (and the -wal and -shm files
	// SQLite derives from it) is private to the server's user.
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	f.Close()

	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", sqliteBusyMillis))
	q.Add("_pragma", "synchronous(FULL)")
	q.Add("_pragma", "foreign_keys(1)")
	// Writers take the write lock when they begin, so a transaction never
	// has to upgrade a read lock (which fails at once instead of waiting).
	q.Set("_txlock", "immediate")
	u := url.URL{Scheme: "file", Path: abs, RawQuery: q.Encode()}

	sdb, err := sql.Open("sqlite", u.String())
	if err != nil {
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	sdb.SetMaxOpenConns(8)
	sdb.SetMaxIdleConns(8)
	mode, err := setWAL(ctx, sdb)
	if err != nil {
		sdb.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	if !strings.EqualFold(mode, "wal") {
		sdb.Close()
		return nil, fmt.Errorf("open sqlite %s: journal mode is %q, want wal", path, mode)
	}
	if err := migrate(ctx, sdb, "sqlite", ""); err != nil {
		sdb.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	d := &db{
		sql: sdb,
		fkViolation: func(err error) bool {
			var se *sqlite.Error
			return errors.As(err, &se) && se.Code() == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY
		},
	}
	d.startCommitter()
	return d, nil
}
