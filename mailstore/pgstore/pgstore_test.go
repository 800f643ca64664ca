package pgstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/mailhost/mailhost/internal/pgtest"
	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/mailstore/pgstore"
	"github.com/mailhost/mailhost/mailstore/storetest"
)

// open makes a store on a fresh schema; the suite closes it.
func open(t *testing.T) mailstore.Store {
	t.Helper()
	st, err := pgstore.Open(context.Background(), pgtest.URL(t), pgstore.Options{Node: "test"})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return st
}

func TestConformance(t *testing.T) {
	storetest.Run(t, open)
}

func TestMigrateTwiceAndConcurrently(t *testing.T) {
	url := pgtest.URL(t)
	ctx := context.Background()
	errs := make(chan error, 3)
	stores := make(chan *pgstore.Store, 3)
	for i := 0; i < 3; i++ {
		go func() {
			st, err := pgstore.Open(ctx, url, pgstore.Options{})
			errs <- err
			stores <- st
		}()
	}
	for i := 0; i < 3; i++ {
		if err := <-errs; err != nil {
			t.Fatalf("Open %d: %v", i, err)
		}
		st := <-stores
		defer st.Close()
	}
	st, err := pgstore.Open(ctx, url, pgstore.Options{})
	if err != nil {
		t.Fatalf("Open again: %v", err)
	}
	defer st.Close()
	var n int
	if err := st.Pool().QueryRow(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != pgstore.SchemaVersion() {
		t.Errorf("schema_migrations has %d rows, want %d", n, pgstore.SchemaVersion())
	}
}

// A database migrated by a newer binary that raised min_compatible past
// this binary's schema is refused; one that did not is used.
func TestSchemaTooNew(t *testing.T) {
	url := pgtest.URL(t)
	ctx := context.Background()
	st, err := pgstore.Open(ctx, url, pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	next := pgstore.SchemaVersion() + 1
	if _, err := st.Pool().Exec(ctx, `INSERT INTO schema_migrations (version, name, min_compatible) VALUES ($1, 'future', 1)`, next); err != nil {
		t.Fatal(err)
	}
	st.Close()
	st, err = pgstore.Open(ctx, url, pgstore.Options{})
	if err != nil {
		t.Fatalf("Open after a compatible newer migration: %v", err)
	}
	if _, err := st.Pool().Exec(ctx, `UPDATE schema_migrations SET min_compatible = $1 WHERE version = $1`, next); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if _, err := pgstore.Open(ctx, url, pgstore.Options{}); !errors.Is(err, mailstore.ErrSchemaTooNew) {
		t.Fatalf("Open after an incompatible migration = %v, want ErrSchemaTooNew", err)
	}
}

func TestCluster(t *testing.T) {
	storetest.RunCluster(t, func(t *testing.T) mailstore.Cluster {
		return open(t).(*pgstore.Store)
	})
}
