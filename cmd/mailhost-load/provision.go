package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// apiCall sends one JSON request to the management API. It waits and
// retries while the API answers 429 (the per-key rate limit: provisioning
// a hundred mailboxes goes past the default burst).
func apiCall(ctx context.Context, o options, method, path string, body any) error {
	raw, err := json.Marshal(body)
	if err != nil {
		return err
	}
	for {
		req, err := http.NewRequestWithContext(ctx, method, o.api+path, bytes.NewReader(raw))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+o.key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return fmt.Errorf("%s %s: %w", method, path, err)
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		if resp.StatusCode == http.StatusTooManyRequests {
			wait := time.Second
			if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
				wait = time.Duration(s) * time.Second
			}
			select {
			case <-time.After(wait):
				continue
			case <-ctx.Done():
				return fmt.Errorf("%s %s: %w", method, path, ctx.Err())
			}
		}
		if resp.StatusCode >= 300 {
			return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, bytes.TrimSpace(b))
		}
		return nil
	}
}

// provision creates the domain (enterprise plan, room for all mailboxes)
// and its mailboxes, four at a time: each costs the server a password hash.
func provision(ctx context.Context, o options, addrs []string) error {
	if err := apiCall(ctx, o, "POST", "/domains/", map[string]any{"name": o.domain, "plan": "enterprise", "max_mailboxes": len(addrs)}); err != nil {
		return fmt.Errorf("provision: %w", err)
	}
	errs := make(chan error, len(addrs))
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for _, a := range addrs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs <- apiCall(ctx, o, "POST", "/users/", map[string]any{"domain_name": o.domain, "email": a, "password": o.password})
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return fmt.Errorf("provision: %w", err)
		}
	}
	return nil
}
