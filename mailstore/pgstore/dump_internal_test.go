package pgstore

import (
	"context"
	"slices"
	"testing"

	"github.com/mailhost/mailhost/internal/pgtest"
)

// notLoaded are the columns of the schema that Load does not write, each
// with why: the tables left out of a copy whole ("*"), and columns of
// loaded tables that take their default. A column in neither this nor
// tableColumns fails TestDumpCoversSchema: a migration that adds one must
// say whether a copy carries it (Dump, Load, storecopy's digest, the
// README's list) or why not.
var notLoaded = map[string]map[string]string{
	"schema_migrations": {"*": "the schema's own version, made by Open"},
	"domain_usage":      {"*": "folded into the domains' counters by Dump"},
	"changes":           {"*": "the folders' change log: a copied folder starts with an empty one (mailstore/dump.go)"},
	"jobs":              {"*": "when each periodic job last ran: one may run once more"},
	"nodes":             {"*": "heartbeats of the running nodes, renewed by each"},
	"settings":          {"*": "written one by one by pgLoader.setting, not by COPY"},
	"transfer":          {"shard": "a month's shards are summed by Dump and loaded as shard 0"},
	"certs":             {"updated_at": "bbolt keeps no such time; nothing reads it"},
	"event_marks":       {"created_at": "bbolt keeps no such time; nothing reads it"},
	"messages":          {"header": "the body's summary (blobs.header), which Summaries copies in on first read"},
	"folder_keywords":   {"*": "the folders' keyword counts, counted from the messages by Load"},
	"watching":          {"*": "the running nodes' interest in accounts, renewed by each (notify.go)"},
	"sieve_scripts":     {"version": "a stamp for the nodes' caches of parsed scripts, given anew by the table's trigger"},
}

func TestDumpCoversSchema(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, pgtest.URL(t), Options{Node: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rows, err := s.pool.Query(ctx, `SELECT table_name, column_name FROM information_schema.columns
		WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	seen := map[string]bool{}
	for rows.Next() {
		var table, column string
		if err := rows.Scan(&table, &column); err != nil {
			t.Fatal(err)
		}
		seen[table] = true
		if slices.Contains(tableColumns[table], column) {
			continue
		}
		if _, ok := notLoaded[table]["*"]; ok {
			continue
		}
		if _, ok := notLoaded[table][column]; ok {
			continue
		}
		t.Errorf("column %s.%s is neither copied by Dump and Load nor listed in notLoaded with why", table, column)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for _, table := range dataTables {
		if !seen[table] {
			t.Errorf("dataTables names %s, which the schema does not have", table)
		}
	}
}
