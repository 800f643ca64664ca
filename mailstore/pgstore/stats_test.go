package pgstore_test

import (
	"context"
	"testing"

	"github.com/mailhost/mailhost/internal/pgtest"
	"github.com/mailhost/mailhost/mailstore/pgstore"
)

func TestSizes(t *testing.T) {
	ctx := context.Background()
	st, err := pgstore.Open(ctx, pgtest.URL(t), pgstore.Options{Node: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	db, tables, err := st.Sizes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	var sum int64
	for _, tb := range tables {
		names[tb.Name] = true
		sum += tb.Bytes
	}
	if db <= 0 || !names["partners"] || !names["messages"] || sum <= 0 || sum > db {
		t.Errorf("Sizes() = %d, %+v; want the database's size above the sum of its tables, partners and messages among them", db, tables)
	}
}
