package boltstore_test

import (
	"testing"

	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/mailstore/storetest"
)

// The rules both stores decide, each by its name (storetest/rules.go);
// pgstore's rules_test.go runs the same.

func openTemp(t *testing.T) mailstore.Store { return openBolt(t, t.TempDir()) }

func TestRuleCountLimits(t *testing.T)   { storetest.RuleCountLimits(t, openTemp) }
func TestRuleQuotaAtCommit(t *testing.T) { storetest.RuleQuotaAtCommit(t, openTemp) }
func TestRuleTransferCap(t *testing.T)   { storetest.RuleTransferCap(t, openTemp) }
func TestRuleRetention(t *testing.T)     { storetest.RuleRetention(t, openTemp) }
func TestRuleFlags(t *testing.T)         { storetest.RuleFlags(t, openTemp) }
func TestRuleFolderNames(t *testing.T)   { storetest.RuleFolderNames(t, openTemp) }
func TestRuleAttempt(t *testing.T)       { storetest.RuleAttempt(t, openTemp) }
