package pgstore_test

import (
	"testing"

	"github.com/mailhost/mailhost/mailstore/storetest"
)

// The rules both stores decide, each by its name (storetest/rules.go);
// boltstore's rules_test.go runs the same.

func TestRuleCountLimits(t *testing.T)   { storetest.RuleCountLimits(t, open) }
func TestRuleQuotaAtCommit(t *testing.T) { storetest.RuleQuotaAtCommit(t, open) }
func TestRuleTransferCap(t *testing.T)   { storetest.RuleTransferCap(t, open) }
func TestRuleRetention(t *testing.T)     { storetest.RuleRetention(t, open) }
func TestRuleFlags(t *testing.T)         { storetest.RuleFlags(t, open) }
func TestRuleFolderNames(t *testing.T)   { storetest.RuleFolderNames(t, open) }
func TestRuleAttempt(t *testing.T)       { storetest.RuleAttempt(t, open) }
