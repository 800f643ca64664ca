package pgstore_test

import (
	"testing"

	"github.com/mailhost/mailhost/mailstore/storetest"
)

func TestAutoReplies(t *testing.T) {
	storetest.RunAutoReplies(t, open)
}
