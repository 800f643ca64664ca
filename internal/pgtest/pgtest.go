// Package pgtest gives tests a fresh PostgreSQL schema of their own.
//
// The database is MAILHOST_TEST_POSTGRES, or the project machines' local
// one (postgres://postgres@127.0.0.1:5432/test). Without a database the
// test is skipped with a message, so that `go test ./...` passes on a
// fresh machine; under CI=true it fails instead, since CI must run these
// tests.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// DefaultURL is the test database on the project's machines.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// BaseURL is the database the tests use.
func BaseURL() string {
	if u := os.Getenv("MAILHOST_TEST_POSTGRES"); u != "" {
		return u
	}
	return DefaultURL
}

// URL creates an empty schema for t, dropped when t ends, and answers a
// URL that selects it (search_path). Each call makes a new schema: two
// store handles on one URL share a database as two nodes do.
func URL(t testing.TB) string {
	t.Helper()
	base := BaseURL()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("PostgreSQL at %s: %v (CI=true: the PostgreSQL tests must run)", redact(base), err)
		}
		t.Skipf("no PostgreSQL at %s (%v): set MAILHOST_TEST_POSTGRES to run this test", redact(base), err)
	}
	defer conn.Close(context.Background())
	var b [6]byte
	rand.Read(b[:])
	schema := "mhtest_" + hex.EncodeToString(b[:])
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("create schema %s: %v", schema, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer c.Close(context.Background())
		if _, err := c.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("MAILHOST_TEST_POSTGRES: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// redact hides a password in a URL for messages.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}
