package storetest

import "testing"

// runMail checks the mail plane: delivery, folders, messages, retention.
func runMail(t *testing.T, open Open) {}
