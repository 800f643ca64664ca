package mailstore

import (
	"errors"
	"testing"
)

func TestCheckFolderName(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"INBOX", true},
		{"Work/2026", true},
		{"a.b", true},
		{"...", true},
		{"", false},
		{"/a", false},
		{"a/", false},
		{"a//b", false},
		{"a*", false},
		{"a%b", false},
		{"a\x01b", false},
		{".", false},
		{"..", false},
		{"a/../b", false},
		{"a/./b", false},
		{"a/..", false},
		{"../a", false},
	}
	for _, tt := range tests {
		err := CheckFolderName(tt.name)
		if tt.ok && err != nil {
			t.Errorf("CheckFolderName(%q) = %v, want nil", tt.name, err)
		}
		if !tt.ok && !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("CheckFolderName(%q) = %v, want ErrInvalidArgument", tt.name, err)
		}
	}
}
