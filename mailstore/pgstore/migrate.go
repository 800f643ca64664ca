package pgstore

import (
	"context"
	"embed"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/mailhost/mailhost/mailstore"
)

// The schema is a list of SQL files, migrations/NNN_name.sql, applied in
// order, each in its own transaction with its row in schema_migrations.
//
// Rolling upgrades: a database may be ahead of a binary that still runs
// against it (the nodes are upgraded one at a time). Each migration row
// records min_compatible, the oldest schema version a binary may know and
// still use the database; a file raises it with a line
// "-- min_compatible: N" when it breaks what older binaries do. A binary
// whose newest migration is below the database's highest min_compatible
// refuses to start (mailstore.ErrSchemaTooNew); otherwise it runs, and
// ignores the tables and columns it does not know.

//go:embed migrations/*.sql
var migrationFiles embed.FS

type migration struct {
	version       int
	name          string
	sql           string
	minCompatible int
}

var (
	fileName    = regexp.MustCompile(`^(\d{3})_[a-z0-9_]+\.sql$`)
	compatMarks = regexp.MustCompile(`(?m)^-- min_compatible: (\d+)\s*$`)
)

// migrations reads the embedded files; their names are checked by a test,
// so an error here is a build mistake.
func migrations() ([]migration, error) {
	entries, err := migrationFiles.ReadDir("migrations")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, e := range entries {
		m := fileName.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("migration file %q: want NNN_name.sql", e.Name())
		}
		v, _ := strconv.Atoi(m[1])
		raw, err := migrationFiles.ReadFile(path.Join("migrations", e.Name()))
		if err != nil {
			return nil, err
		}
		mc := 1
		if c := compatMarks.FindStringSubmatch(string(raw)); c != nil {
			mc, _ = strconv.Atoi(c[1])
		}
		out = append(out, migration{version: v, name: e.Name(), sql: string(raw), minCompatible: mc})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	for i, m := range out {
		if m.version != i+1 {
			return nil, fmt.Errorf("migration %s: want version %03d", m.name, i+1)
		}
	}
	return out, nil
}

// migrate applies the missing migrations. Nodes starting at once take
// turns on an advisory lock named for the schema, so each migration runs
// once; the others find it applied.
func (s *Store) migrate(ctx context.Context) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer conn.Release()
	const lockKey = `hashtext('mailhost.migrate.' || current_schema())`
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(`+lockKey+`)`); err != nil {
		return fmt.Errorf("migrate: take the lock: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(`+lockKey+`)`)

	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version        int PRIMARY KEY,
		name           text NOT NULL,
		min_compatible int NOT NULL,
		applied_at     timestamptz NOT NULL DEFAULT now())`); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	var have, needs int
	if err := conn.QueryRow(ctx, `SELECT coalesce(max(version), 0), coalesce(max(min_compatible), 0) FROM schema_migrations`).Scan(&have, &needs); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if needs > len(ms) {
		return fmt.Errorf("database schema %d needs a binary of schema %d or later, this one has %d: %w", have, needs, len(ms), mailstore.ErrSchemaTooNew)
	}
	for _, m := range ms[min(have, len(ms)):] {
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name, min_compatible) VALUES ($1, $2, $3)`,
				m.version, strings.TrimSuffix(m.name, ".sql"), m.minCompatible)
			return err
		})
		if err != nil {
			return fmt.Errorf("migrate: apply %s: %w", m.name, err)
		}
	}
	return nil
}

// SchemaVersion is the newest migration this binary has.
func SchemaVersion() int {
	ms, _ := migrations()
	return len(ms)
}
