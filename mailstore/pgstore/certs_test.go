package pgstore_test

import (
	"testing"

	"github.com/mailhost/mailhost/mailstore/storetest"
)

func TestCerts(t *testing.T) {
	storetest.RunCerts(t, open)
}
