package boltstore_test

import (
	"testing"

	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/mailstore/storetest"
)

func TestBoltAutoReplies(t *testing.T) {
	storetest.RunAutoReplies(t, func(t *testing.T) mailstore.Store { return openBolt(t, t.TempDir()) })
}
