// Package redisreplay is an mcpdecision.ReplayStore in Redis, for MCP
// servers behind several replicas: a signed decision is then single use
// across all of them. One SET key 1 NX PXAT until per verified call
// (Redis 6.2 or later); the key expires when the statement does.
package redisreplay

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcp-extauthz/mcp-extauthz/mcpdecision"
)

// Store claims decision ids in Redis under Prefix + id.
type Store struct {
	Client redis.UniversalClient
	Prefix string // e.g. "mcp-decision:"; keeps the keys apart from others
}

var _ mcpdecision.ReplayStore = (*Store)(nil)

// Claim implements mcpdecision.ReplayStore: fresh when the key was not
// set; an error (Redis down, a timeout) is the verifier's
// decision_unavailable, never an admission.
func (s *Store) Claim(ctx context.Context, id string, until time.Time) (bool, error) {
	err := s.Client.SetArgs(ctx, s.Prefix+id, 1, redis.SetArgs{Mode: "NX", ExpireAt: until}).Err()
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, redis.Nil): // NX: the id was set before
		return false, nil
	}
	return false, err
}
