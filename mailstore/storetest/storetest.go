// Package storetest is the conformance suite of mailstore.Store: any
// implementation passes it by calling Run from its own tests.
package storetest

import (
	"testing"

	"github.com/mailhost/mailhost/mailstore"
)

// Open makes a new, empty store for one test; the suite closes it.
type Open func(t *testing.T) mailstore.Store

// Run runs the whole suite against stores made by open, but the rules,
// which a store runs one by one (RuleCountLimits ..., see rules.go).
func Run(t *testing.T, open Open) {
	t.Run("control", func(t *testing.T) { runControl(t, open) })
	t.Run("mail", func(t *testing.T) { runMail(t, open) })
	t.Run("queue", func(t *testing.T) { runQueue(t, open) })
}
