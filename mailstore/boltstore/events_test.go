package boltstore_test

import (
	"testing"

	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/mailstore/storetest"
)

func TestBoltAudit(t *testing.T) {
	storetest.RunAudit(t, func(t *testing.T) mailstore.Store { return openBolt(t, t.TempDir()) })
}

func TestBoltWebhooks(t *testing.T) {
	storetest.RunWebhooks(t, func(t *testing.T) mailstore.Store { return openBolt(t, t.TempDir()) })
}
