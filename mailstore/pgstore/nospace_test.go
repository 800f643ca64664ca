package pgstore

import (
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/mailhost/mailhost/mailstore"
)

// TestNoSpace: PostgreSQL's disk_full is mailstore.ErrNoSpace, and stays
// the PgError it was; other errors are left alone.
func TestNoSpace(t *testing.T) {
	full := fmt.Errorf("deliver: %w", &pgconn.PgError{Code: codeDiskFull, Message: `could not extend file "base/16384/16390": No space left on device`})
	err := noSpace(full)
	var pe *pgconn.PgError
	if !errors.Is(err, mailstore.ErrNoSpace) || !errors.As(err, &pe) || pe.Code != codeDiskFull {
		t.Errorf("noSpace(disk_full) = %v, want ErrNoSpace wrapping the PgError", err)
	}
	for _, other := range []error{nil, &pgconn.PgError{Code: codeUnique}, errors.New("connection refused")} {
		if got := noSpace(other); got != other {
			t.Errorf("noSpace(%v) = %v, want it unchanged", other, got)
		}
	}
}
