package store

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Open opens the store a DSN names, creating or migrating its schema:
// "postgres://..." or "postgresql://..." is a PostgreSQL database (any
// connection string pgx accepts in URL form); anything else is the path of a
// SQLite file, created if absent. The caller must call Close.
func Open(ctx context.Context, dsn string) (Store, error) {
	switch {
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		return openPostgres(ctx, dsn)
	case dsn == "":
		return nil, fmt.Errorf("open store: empty DSN: want a SQLite file path or a postgres:// URL")
	}
	return openSQLite(ctx, dsn)
}

//go:embed schema
var schemaFS embed.FS

// A migration is one numbered schema file: schema/<dialect>/NNNN_name.sql.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations reads a dialect's migrations, in version order.
func migrations(dialect string) ([]migration, error) {
	dir := path.Join("schema", dialect)
	ents, err := fs.ReadDir(schemaFS, dir)
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, e := range ents {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 || !strings.HasSuffix(e.Name(), ".sql") {
			return nil, fmt.Errorf("schema file %s/%s: want NNNN_name.sql", dir, e.Name())
		}
		b, err := fs.ReadFile(schemaFS, path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: e.Name(), sql: string(b)})
	}
	slices.SortFunc(ms, func(a, b migration) int { return a.version - b.version })
	for i, m := range ms {
		if m.version != i+1 {
			return nil, fmt.Errorf("schema %s: file %s: want version %d", dialect, m.name, i+1)
		}
	}
	return ms, nil
}

// migrate brings the schema to the latest version in one transaction.
// lock, if not empty, runs first in that transaction to keep concurrent
// openers (several replicas starting at once) apart.
func migrate(ctx context.Context, db *sql.DB, dialect, lock string) error {
	ms, err := migrations(dialect)
	if err != nil {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if lock != "" {
		if _, err := tx.ExecContext(ctx, lock); err != nil {
			return fmt.Errorf("lock schema: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (
	version    INTEGER NOT NULL PRIMARY KEY,
	applied_us BIGINT  NOT NULL
)`); err != nil {
		return fmt.Errorf("create schema_version: %w", err)
	}
	var cur sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT max(version) FROM schema_version`).Scan(&cur); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if int(cur.Int64) > len(ms) {
		return fmt.Errorf("database schema version %d is newer than this program's (%d): upgrade Spotter", cur.Int64, len(ms))
	}
	insert := rebind(dialect == "postgres", `INSERT INTO schema_version (version, applied_us) VALUES (?, ?)`)
	for _, m := range ms[cur.Int64:] {
		if _, err := tx.ExecContext(ctx, m.sql); err != nil {
			return fmt.Errorf("apply schema %s: %w", m.name, err)
		}
		if _, err := tx.ExecContext(ctx, insert, m.version, time.Now().UnixMicro()); err != nil {
			return fmt.Errorf("record schema %s: %w", m.name, err)
		}
	}
	return tx.Commit()
}

// rebind rewrites ? placeholders as $1, $2... when dollar is set. The
// store's queries hold no ? inside string literals.
func rebind(dollar bool, q string) string {
	if !dollar {
		return q
	}
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
