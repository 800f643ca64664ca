package boltstore_test

import (
	"testing"

	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/mailstore/storetest"
)

func TestBoltCerts(t *testing.T) {
	storetest.RunCerts(t, func(t *testing.T) mailstore.Store { return openBolt(t, t.TempDir()) })
}
