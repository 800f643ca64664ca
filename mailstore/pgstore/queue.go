package pgstore

import (
	"context"
	"time"

	"github.com/mailhost/mailhost/mailstore"
)

// ClaimOutbound implements mailstore.Store.
func (s *Store) ClaimOutbound(ctx context.Context, now time.Time, lease time.Duration, limit int, opt mailstore.ClaimOptions) ([]mailstore.Outbound, error) {
	return nil, errNotImplemented
}

// OutboundBody implements mailstore.Store.
func (s *Store) OutboundBody(ctx context.Context, id int64) ([]byte, error) {
	return nil, errNotImplemented
}

// RecordAttempt implements mailstore.Store.
func (s *Store) RecordAttempt(ctx context.Context, id int64, a mailstore.Attempt) (mailstore.Outbound, error) {
	return mailstore.Outbound{}, errNotImplemented
}

// ReleaseHeld implements mailstore.Store.
func (s *Store) ReleaseHeld(ctx context.Context, now time.Time) (int, error) {
	return 0, errNotImplemented
}

// OutboundEntries implements mailstore.Store.
func (s *Store) OutboundEntries(ctx context.Context, p mailstore.Page) ([]mailstore.Outbound, int, error) {
	return nil, 0, errNotImplemented
}

// FlushOutbound implements mailstore.Store.
func (s *Store) FlushOutbound(ctx context.Context, now time.Time) (int, error) {
	return 0, errNotImplemented
}

// ReleaseLeases implements mailstore.Store.
func (s *Store) ReleaseLeases(ctx context.Context, now time.Time) (int, error) {
	return 0, errNotImplemented
}

// FlushOutboundDomain implements mailstore.Store.
func (s *Store) FlushOutboundDomain(ctx context.Context, domainID int64, now time.Time) (int, error) {
	return 0, errNotImplemented
}

// DeleteOutbound implements mailstore.Store.
func (s *Store) DeleteOutbound(ctx context.Context, id int64) (mailstore.Outbound, error) {
	return mailstore.Outbound{}, errNotImplemented
}
