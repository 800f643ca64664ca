package credential

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestVerifierBound: hashes and verifications share one bound; work past
// it waits, and gives up with the context.
func TestVerifierBound(t *testing.T) {
	v := NewVerifier(1)
	v.slots <- struct{}{} // the one slot is busy
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := v.Hash(ctx, "password123"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Hash with the bound reached = %v, want the context's deadline", err)
	}
	if err := v.Verify(ctx, "$argon2id$v=19$m=19456,t=2,p=1$x$y", "password123"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Verify with the bound reached = %v, want the context's deadline", err)
	}
	<-v.slots
	phc, err := v.Hash(context.Background(), "password123")
	if err != nil {
		t.Fatalf("Hash = %v", err)
	}
	if err := v.Verify(context.Background(), phc, "password123"); err != nil {
		t.Errorf("Verify of its own hash = %v", err)
	}
	if len(v.slots) != 0 {
		t.Errorf("%d slots still taken after the work ended", len(v.slots))
	}
}
