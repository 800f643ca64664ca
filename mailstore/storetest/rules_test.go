package storetest

import (
	"os"
	"regexp"
	"testing"
)

// TestRulesRunByBothStores: every Rule<Name> is run by both stores as
// TestRule<Name>, so that a rule added here cannot go unchecked on one.
func TestRulesRunByBothStores(t *testing.T) {
	src, err := os.ReadFile("rules.go")
	if err != nil {
		t.Fatal(err)
	}
	rules := regexp.MustCompile(`(?m)^func (Rule\w+)\(`).FindAllStringSubmatch(string(src), -1)
	if len(rules) == 0 {
		t.Fatal("rules.go declares no Rule function")
	}
	for _, store := range []string{"../boltstore/rules_test.go", "../pgstore/rules_test.go"} {
		tests, err := os.ReadFile(store)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rules {
			if !regexp.MustCompile(`func Test` + r[1] + `\(t \*testing\.T\)\s*\{\s*storetest\.` + r[1] + `\(`).Match(tests) {
				t.Errorf("%s does not run storetest.%s as Test%s", store, r[1], r[1])
			}
		}
	}
}
