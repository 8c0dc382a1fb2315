package catalog

import (
	"fmt"
	"time"
)

// MaxMessagingKeys caps a workspace's messaging signing secrets: the
// current one and those still inside a rotation's overlap.
const MaxMessagingKeys = 3

// MaxMessagingCountries caps the country lists of a messaging policy.
const MaxMessagingCountries = 250

// MessagingKey is one HMAC secret of a workspace's messaging integration,
// sealed by the handler before the command is replicated (as AgentKey):
// the plain secret never enters the Raft log.
type MessagingKey struct {
	Sealed   []byte    `json:"sealed"`
	NotAfter time.Time `json:"not_after,omitzero"`
}

// MessagingPolicy holds the knobs of the messaging preflight (spec 4.13).
// Zero values mean "the default" (risk/messaging.Defaults); risk/messaging
// validates ranges before a command carries one.
type MessagingPolicy struct {
	// Per destination prefix: sends in PrefixWindow before delay, and the
	// multiple of it at which the prefix is blocked for BlockSeconds.
	PrefixLimit       int `json:"prefix_limit,omitempty"`
	PrefixWindowSecs  int `json:"prefix_window_seconds,omitempty"`
	PrefixBlockFactor int `json:"prefix_block_factor,omitempty"`
	// Per full number (when sent), per subject and per country.
	NumberLimit       int `json:"number_limit,omitempty"`
	NumberWindowSecs  int `json:"number_window_seconds,omitempty"`
	SubjectLimit      int `json:"subject_limit,omitempty"`
	SubjectWindowSecs int `json:"subject_window_seconds,omitempty"`
	CountryLimit      int `json:"country_limit,omitempty"`
	CountryWindowSecs int `json:"country_window_seconds,omitempty"`
	// Conversion: within ConversionWindowSecs, a prefix with at least
	// ConversionMinSends sends and fewer than ConversionMinPercent percent
	// of them verified is SMS pumping and is blocked for BlockSeconds.
	ConversionWindowSecs int `json:"conversion_window_seconds,omitempty"`
	ConversionMinSends   int `json:"conversion_min_sends,omitempty"`
	ConversionMinPercent int `json:"conversion_min_percent,omitempty"`
	BlockSeconds         int `json:"block_seconds,omitempty"`
	// AllowedCountries, when not empty, is the only countries sent to;
	// BlockedCountries are never sent to (ISO 3166-1 alpha-2).
	AllowedCountries []string `json:"allowed_countries,omitempty"`
	BlockedCountries []string `json:"blocked_countries,omitempty"`
	// Channels, when not empty, restricts the channels (sms, voice, whatsapp).
	Channels []string `json:"channels,omitempty"`
}

// MessagingSettings is a workspace's messaging integration: the secrets
// a messaging provider or the customer's backend signs preflights and
// delivery events with, and the policy. One per workspace, keyed by it.
type MessagingSettings struct {
	WorkspaceID string          `json:"workspace_id"`
	Keys        []MessagingKey  `json:"keys"`
	Policy      MessagingPolicy `json:"policy"`
	CreatedAt   time.Time       `json:"created_at"`
	UpdatedAt   time.Time       `json:"updated_at"`
}

// PutMessagingSettings creates or replaces a workspace's messaging settings.
type PutMessagingSettings struct {
	Settings MessagingSettings `json:"settings"`
}

func (*PutMessagingSettings) Kind() string { return "messaging_settings.put" }
func (c *PutMessagingSettings) Apply(tx *Tx) (any, error) {
	s := c.Settings
	if _, ok := tx.next.Workspaces[s.WorkspaceID]; !ok {
		return nil, fmt.Errorf("%w: workspace %s", ErrNotFound, s.WorkspaceID)
	}
	if len(s.Keys) > MaxMessagingKeys {
		return nil, fmt.Errorf("%w: messaging settings hold at most %d keys", ErrConflict, MaxMessagingKeys)
	}
	if len(s.Policy.AllowedCountries) > MaxMessagingCountries || len(s.Policy.BlockedCountries) > MaxMessagingCountries || len(s.Policy.Channels) > 8 {
		return nil, fmt.Errorf("%w: messaging policy lists over their limits", ErrConflict)
	}
	if cur, ok := tx.next.Messaging[s.WorkspaceID]; ok {
		s.CreatedAt = cur.CreatedAt
	}
	Writable(tx, "messaging", &tx.next.Messaging)[s.WorkspaceID] = &s
	return &s, nil
}

// DeleteMessagingSettings removes a workspace's messaging settings: its
// signed requests are then refused.
type DeleteMessagingSettings struct {
	WorkspaceID string `json:"workspace_id"`
}

func (*DeleteMessagingSettings) Kind() string { return "messaging_settings.delete" }
func (c *DeleteMessagingSettings) Apply(tx *Tx) (any, error) {
	if _, ok := tx.next.Messaging[c.WorkspaceID]; !ok {
		return nil, fmt.Errorf("%w: messaging settings of workspace %s", ErrNotFound, c.WorkspaceID)
	}
	delete(Writable(tx, "messaging", &tx.next.Messaging), c.WorkspaceID)
	return nil, nil
}

func deleteMessagingOf(tx *Tx, workspaceID string) {
	if _, ok := tx.next.Messaging[workspaceID]; ok {
		delete(Writable(tx, "messaging", &tx.next.Messaging), workspaceID)
	}
}
