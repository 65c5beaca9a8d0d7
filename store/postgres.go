package store

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

// postgresLock is the advisory lock key that keeps concurrent migrations
// (several replicas starting at once) apart: "spotter" in ASCII.
const postgresLock = "SELECT pg_advisory_xact_lock(32493246319191410)"

// openPostgres connects to a PostgreSQL database and migrates its schema.
func openPostgres(ctx context.Context, dsn string) (*db, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("open postgres %s: %w", redactDSN(dsn), err)
	}
	sdb := stdlib.OpenDB(*cfg)
	sdb.SetMaxOpenConns(16)
	sdb.SetMaxIdleConns(4)
	if err := sdb.PingContext(ctx); err != nil {
		sdb.Close()
		return nil, fmt.Errorf("open postgres %s: %w", redactDSN(dsn), err)
	}
	if err := migrate(ctx, sdb, "postgres", postgresLock); err != nil {
		sdb.Close()
		return nil, fmt.Errorf("open postgres %s: %w", redactDSN(dsn), err)
	}
	d := &db{
		sql:    sdb,
		dollar: true,
		fkViolation: func(err error) bool {
			var pe *pgconn.PgError
			return errors.As(err, &pe) && pe.Code == "23503" // foreign_key_violation
		},
		retryable: func(err error) bool {
			var pe *pgconn.PgError
			// deadlock_detected, serialization_failure
			return errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "40001")
		},
	}
	d.startCommitter()
	return d, nil
}

// redactDSN hides a password in a DSN meant for an error message.
func redactDSN(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "(unparsable DSN)"
	}
	if q := u.Query(); q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}
