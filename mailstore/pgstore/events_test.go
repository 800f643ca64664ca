package pgstore_test

import (
	"testing"

	"github.com/mailhost/mailhost/mailstore/storetest"
)

func TestAudit(t *testing.T) { storetest.RunAudit(t, open) }

func TestWebhooks(t *testing.T) { storetest.RunWebhooks(t, open) }
