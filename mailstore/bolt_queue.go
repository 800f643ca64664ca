package mailstore

// Temporary: the bbolt queue is being written (helper). Replaced wholesale.

import (
	"context"
	"errors"
	"time"
)

var errQueueNotBuilt = errors.New("outbound queue: not built yet")

func (s *Bolt) ClaimOutbound(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]Outbound, error) {
	return nil, errQueueNotBuilt
}
func (s *Bolt) OutboundBody(ctx context.Context, id int64) ([]byte, error) {
	return nil, errQueueNotBuilt
}
func (s *Bolt) RecordAttempt(ctx context.Context, id int64, a Attempt) (Outbound, error) {
	return Outbound{}, errQueueNotBuilt
}
func (s *Bolt) ReleaseHeld(ctx context.Context, now time.Time) (int, error) {
	return 0, errQueueNotBuilt
}
func (s *Bolt) OutboundEntries(ctx context.Context, p Page) ([]Outbound, int, error) {
	return nil, 0, errQueueNotBuilt
}
func (s *Bolt) FlushOutbound(ctx context.Context, now time.Time) (int, error) {
	return 0, errQueueNotBuilt
}
func (s *Bolt) Transfer(ctx context.Context, domainID int64, month string) (Transfer, error) {
	return Transfer{}, errQueueNotBuilt
}
func (s *Bolt) DKIMKeys(ctx context.Context, domainID int64) ([]DKIMKey, error) {
	return nil, errQueueNotBuilt
}
func (s *Bolt) EnsureDKIMKeys(ctx context.Context, domainID int64, keys []DKIMKey) ([]DKIMKey, error) {
	return nil, errQueueNotBuilt
}
