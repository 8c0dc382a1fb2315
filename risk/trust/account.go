package trust

import (
	"context"

	"github.com/trustd/trustd/risk/account"
)

// AccountObserver is Account Defence's view of a subject and a device
// (risk/account.Module).
type AccountObserver interface {
	Signals(ctx context.Context, workspaceID, subjectHash, deviceHash string) (account.Signals, error)
}

// WithAccount is own plus Account Defence's observations, the signals a
// trust decision and a journey's escalation rest on: a subject or device
// labelled fraudulent counts as abuse, failed authentications the account
// module saw (its one-hour window) count as failed attempts when they are
// more than own's five-minute count, and the customer's trusted-device
// list is the account module's. Both sources only raise what the other
// says, except the trusted device, which the customer asserted through the
// authenticated trusted-device operation.
func WithAccount(own SignalSource, acc AccountObserver) SignalSource {
	return accountSignals{own: own, account: acc}
}

type accountSignals struct {
	own     SignalSource
	account AccountObserver
}

func (a accountSignals) SubjectSignals(ctx context.Context, workspace, subjectHash, deviceHash string) (Signals, error) {
	s, err := a.own.SubjectSignals(ctx, workspace, subjectHash, deviceHash)
	if err != nil {
		return s, err
	}
	acc, err := a.account.Signals(ctx, workspace, subjectHash, deviceHash)
	if err != nil {
		return s, err
	}
	if acc.SubjectLabel == "fraudulent" || acc.DeviceLabel == "fraudulent" {
		s.Label = "abuse"
	}
	s.FailedAttempts5m = max(s.FailedAttempts5m, int64(acc.SubjectFailures+0.5), int64(acc.DeviceFailures+0.5))
	s.TrustedDevice = acc.TrustedDevice
	return s, nil
}
