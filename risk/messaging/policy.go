package messaging

import (
	"slices"
	"time"

	"github.com/trustd/trustd/platform/catalog"
)

// Defaults is the policy of a workspace that set nothing: a prefix (the
// number without its last 4 digits, 10,000 numbers) gets 10 codes in 10
// minutes before delays and is blocked for 4 hours at 5 times that; a
// number 3 in 10 minutes; a subject 5 in 10 minutes; a country 1,000 in an
// hour; and a prefix with 20 sends in an hour of which under 10 % were
// verified is blocked as SMS pumping.
var Defaults = catalog.MessagingPolicy{
	PrefixLimit: 10, PrefixWindowSecs: 600, PrefixBlockFactor: 5,
	NumberLimit: 3, NumberWindowSecs: 600,
	SubjectLimit: 5, SubjectWindowSecs: 600,
	CountryLimit: 1000, CountryWindowSecs: 3600,
	ConversionWindowSecs: 3600, ConversionMinSends: 20, ConversionMinPercent: 10,
	BlockSeconds: 4 * 3600,
}

// Channels and template kinds accepted.
var (
	Channels      = []string{"sms", "voice", "whatsapp"}
	TemplateKinds = []string{"otp_login", "otp_signup", "otp_password_reset", "otp_transaction", "otp_step_up", "otp_other"}
)

// Effective fills the zero knobs of p with Defaults.
func Effective(p catalog.MessagingPolicy) catalog.MessagingPolicy {
	d := Defaults
	for _, f := range []struct{ dst, def *int }{
		{&p.PrefixLimit, &d.PrefixLimit}, {&p.PrefixWindowSecs, &d.PrefixWindowSecs}, {&p.PrefixBlockFactor, &d.PrefixBlockFactor},
		{&p.NumberLimit, &d.NumberLimit}, {&p.NumberWindowSecs, &d.NumberWindowSecs},
		{&p.SubjectLimit, &d.SubjectLimit}, {&p.SubjectWindowSecs, &d.SubjectWindowSecs},
		{&p.CountryLimit, &d.CountryLimit}, {&p.CountryWindowSecs, &d.CountryWindowSecs},
		{&p.ConversionWindowSecs, &d.ConversionWindowSecs}, {&p.ConversionMinSends, &d.ConversionMinSends},
		{&p.ConversionMinPercent, &d.ConversionMinPercent}, {&p.BlockSeconds, &d.BlockSeconds},
	} {
		if *f.dst == 0 {
			*f.dst = *f.def
		}
	}
	return p
}

// ValidatePolicy checks p's ranges (zero means the default) and
// normalises its lists (sorted, no duplicates).
func ValidatePolicy(p catalog.MessagingPolicy) (catalog.MessagingPolicy, error) {
	rng := func(name string, v, lo, hi int) error {
		if v != 0 && (v < lo || v > hi) {
			return ErrPolicyInvalid.With("%s must be %d to %d (0 for the default)", name, lo, hi)
		}
		return nil
	}
	const day = 86400
	for _, c := range []struct {
		name      string
		v, lo, hi int
	}{
		{"prefix_limit", p.PrefixLimit, 1, 1_000_000}, {"prefix_window_seconds", p.PrefixWindowSecs, 60, day},
		{"prefix_block_factor", p.PrefixBlockFactor, 2, 100},
		{"number_limit", p.NumberLimit, 1, 1_000_000}, {"number_window_seconds", p.NumberWindowSecs, 60, day},
		{"subject_limit", p.SubjectLimit, 1, 1_000_000}, {"subject_window_seconds", p.SubjectWindowSecs, 60, day},
		{"country_limit", p.CountryLimit, 1, 100_000_000}, {"country_window_seconds", p.CountryWindowSecs, 60, day},
		{"conversion_window_seconds", p.ConversionWindowSecs, 600, day}, {"conversion_min_sends", p.ConversionMinSends, 5, 1_000_000},
		{"conversion_min_percent", p.ConversionMinPercent, 1, 100}, {"block_seconds", p.BlockSeconds, 300, 2 * day},
	} {
		if err := rng(c.name, c.v, c.lo, c.hi); err != nil {
			return p, err
		}
	}
	var err error
	if p.AllowedCountries, err = countryList("allowed_countries", p.AllowedCountries); err != nil {
		return p, err
	}
	if p.BlockedCountries, err = countryList("blocked_countries", p.BlockedCountries); err != nil {
		return p, err
	}
	if len(p.Channels) > len(Channels) {
		return p, ErrPolicyInvalid.With("channels lists at most %d channels", len(Channels))
	}
	for _, c := range p.Channels {
		if !slices.Contains(Channels, c) {
			return p, ErrPolicyInvalid.With("channels: %q is not sms, voice or whatsapp", c)
		}
	}
	p.Channels = sortedUnique(p.Channels)
	return p, nil
}

func countryList(name string, l []string) ([]string, error) {
	if len(l) > catalog.MaxMessagingCountries {
		return nil, ErrPolicyInvalid.With("%s lists at most %d countries", name, catalog.MaxMessagingCountries)
	}
	for _, c := range l {
		if !validCountry(c) {
			return nil, ErrPolicyInvalid.With("%s: %q is not two upper-case letters", name, c)
		}
	}
	return sortedUnique(l), nil
}

func sortedUnique(l []string) []string {
	if len(l) == 0 {
		return nil
	}
	out := slices.Clone(l)
	slices.Sort(out)
	return slices.Compact(out)
}

func secs(n int) time.Duration { return time.Duration(n) * time.Second }
