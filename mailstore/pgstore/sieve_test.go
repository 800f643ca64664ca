package pgstore_test

import (
	"testing"

	"github.com/mailhost/mailhost/mailstore/storetest"
)

func TestSieveScripts(t *testing.T) {
	storetest.RunSieveScripts(t, open)
}
