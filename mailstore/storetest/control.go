package storetest

import "testing"

// runControl checks the control plane: partners, keys, domains, mailboxes,
// aliases, limits and partner isolation.
func runControl(t *testing.T, open Open) {}
