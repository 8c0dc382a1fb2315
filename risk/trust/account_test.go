package trust

import (
	"context"
	"errors"
	"testing"

	"github.com/trustd/trustd/risk/account"
)

type fixedSignals struct {
	s   Signals
	err error
}

func (f fixedSignals) SubjectSignals(context.Context, string, string, string) (Signals, error) {
	return f.s, f.err
}

type fixedAccount struct {
	s   account.Signals
	err error
}

func (f fixedAccount) Signals(context.Context, string, string, string) (account.Signals, error) {
	return f.s, f.err
}

func TestWithAccountOnlyRaisesExceptTheTrustedDevice(t *testing.T) {
	down := errors.New("down")
	tests := []struct {
		name    string
		own     fixedSignals
		acc     fixedAccount
		want    Signals
		wantErr error
	}{
		{"nothing observed anywhere is nothing", fixedSignals{}, fixedAccount{}, Signals{}, nil},
		{"a fraudulent subject label counts as abuse", fixedSignals{}, fixedAccount{s: account.Signals{SubjectLabel: "fraudulent"}}, Signals{Label: "abuse"}, nil},
		{"a fraudulent device label counts as abuse", fixedSignals{s: Signals{Label: "legitimate"}}, fixedAccount{s: account.Signals{DeviceLabel: "fraudulent"}}, Signals{Label: "abuse"}, nil},
		{"a legitimate account label does not clear the trust label", fixedSignals{s: Signals{Label: "abuse"}}, fixedAccount{s: account.Signals{SubjectLabel: "legitimate"}}, Signals{Label: "abuse"}, nil},
		{"more failures seen by Account Defence raise the count, rounded", fixedSignals{s: Signals{FailedAttempts5m: 1}}, fixedAccount{s: account.Signals{SubjectFailures: 2.6, DeviceFailures: 1}}, Signals{FailedAttempts5m: 3}, nil},
		{"fewer failures never lower the trust module's own count", fixedSignals{s: Signals{FailedAttempts5m: 4, Decisions5m: 7}}, fixedAccount{s: account.Signals{SubjectFailures: 1}}, Signals{FailedAttempts5m: 4, Decisions5m: 7}, nil},
		{"the trusted device is the customer's assertion in Account Defence", fixedSignals{s: Signals{TrustedDevice: true}}, fixedAccount{}, Signals{}, nil},
		{"the trust counters failing fails the signals", fixedSignals{err: down}, fixedAccount{}, Signals{}, down},
		{"Account Defence failing fails the signals", fixedSignals{}, fixedAccount{err: down}, Signals{}, down},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := WithAccount(tc.own, tc.acc).SubjectSignals(context.Background(), "ws", "subject", "device")
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			if err == nil && got != tc.want {
				t.Fatalf("%+v, want %+v", got, tc.want)
			}
		})
	}
	t.Run("an asserted trusted device is kept", func(t *testing.T) {
		got, _ := WithAccount(fixedSignals{}, fixedAccount{s: account.Signals{TrustedDevice: true}}).SubjectSignals(context.Background(), "ws", "s", "d")
		if !got.TrustedDevice {
			t.Fatal("the account module's trusted device was dropped")
		}
	})
}
