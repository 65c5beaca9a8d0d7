package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"

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
		disconnected: pgDisconnected,
		rolledBack:   pgShutdownAnswer,
	}
	d.startCommitter()
	return d, nil
}

// pgDisconnected reports whether err says the server could not be
// reached or the connection was lost (a restart, a failover): not an
// answer to the statement.
func pgDisconnected(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		// connection_exception, or the server shutting down or starting up
		return strings.HasPrefix(pe.Code, "08") || pgShutdownAnswer(err)
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	return errors.As(err, &ce) || errors.As(err, &ne) || errors.Is(err, driver.ErrBadConn) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || pgconn.SafeToRetry(err)
}

// pgShutdownAnswer reports whether err is the server's answer that it is
// shutting down or restarting (admin_shutdown, crash_shutdown,
// cannot_connect_now): an error answered to a COMMIT means the
// transaction was rolled back.
func pgShutdownAnswer(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03")
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
