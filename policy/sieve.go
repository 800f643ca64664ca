package policy

import (
	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/sieve"
)

// SieveOptions are what a mailbox's Sieve script is parsed with, when
// it is stored (the API, ManageSieve) and when it runs at delivery:
// every extension package sieve offers, and the store's size limit, so
// that a script taken for storage always parses for delivery.
var SieveOptions = sieve.ParseOptions{MaxSize: mailstore.MaxSieveScriptBytes}
