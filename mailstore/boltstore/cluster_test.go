package boltstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/mailstore/storetest"
)

func TestBoltCluster(t *testing.T) {
	storetest.RunCluster(t, func(t *testing.T) mailstore.Cluster {
		return openBolt(t, t.TempDir())
	})
}

// TestBoltClusterDurable: jobs taken and settings made outlive a restart.
func TestBoltClusterDurable(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	day := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	s := openBolt(t, dir)
	if ok, err := s.RunOnce(ctx, "retention", day); err != nil || !ok {
		t.Fatalf("RunOnce() = %v, %v; want true", ok, err)
	}
	if v, err := s.Setting(ctx, "secret", func() (string, error) { return "kept", nil }); err != nil || v != "kept" {
		t.Fatalf("Setting() = %q, %v; want kept", v, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openBolt(t, dir)
	defer s.Close()
	if ok, err := s.RunOnce(ctx, "retention", day); err != nil || ok {
		t.Errorf("RunOnce(same slot) after a restart = %v, %v; want false", ok, err)
	}
	if v, err := s.Setting(ctx, "secret", func() (string, error) { return "new", nil }); err != nil || v != "kept" {
		t.Errorf("Setting() after a restart = %q, %v; want kept", v, err)
	}
}
