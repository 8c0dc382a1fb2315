package http

import (
	"time"

	"github.com/trustd/trustd/identity/documents"
	"github.com/trustd/trustd/identity/session"
	"github.com/trustd/trustd/journeys"
	"github.com/trustd/trustd/risk/account"
	"github.com/trustd/trustd/risk/apiprotection"
	"github.com/trustd/trustd/risk/passwords"
	"github.com/trustd/trustd/risk/trust"
	"github.com/trustd/trustd/traffic/admission"
	"github.com/trustd/trustd/traffic/lease"
	"github.com/trustd/trustd/traffic/ratecheck"
	"github.com/trustd/trustd/verify"
)

// modules holds the product modules the route files call, one per line.
type modules struct {
	contract  contractCache
	rl        *ratecheck.Module
	lease     *lease.Module
	admission *admission.Module
	ap        *apiprotection.Module
	account   *account.Module
	pw        *passwords.Module
	verify    *verify.Module
	docs      *documents.Screener
	trust     *trust.Module
	idv       *session.Module
	journeys  *journeys.Module
}

func newModules(s *Server) modules {
	hv, account := verify.New(s.router, s.store, func() time.Time { return s.clock() }, verify.Config{Dev: s.cfg.Dev}), newAccountModule(s)
	return modules{
		rl:        newRateCheck(s),
		lease:     lease.New(s.router, s.clock, s.log),
		admission: admission.New(s.router, s.clock),
		ap:        apiprotection.New(s.router, s.clock),
		account:   account,
		pw:        newPasswordModule(s),
		verify:    hv,
		docs:      newDocumentScreener(),
		trust:     s.newTrustModule(),
		idv:       s.newIdentitySessions(),
		journeys:  s.newJourneys(hv, account),
	}
}

// routes assembles the route table from every module. Adding a module is
// one line here and one file beside this one.
func (s *Server) routes() []Route {
	var rs []Route
	rs = append(rs, s.platformRoutes()...)
	rs = append(rs, s.adminRoutes()...)
	rs = append(rs, s.signingKeyRoutes()...)
	rs = append(rs, s.widgetRoutes()...)
	rs = append(rs, s.clusterRoutes()...)
	rs = append(rs, s.snapshotRoutes()...)
	rs = append(rs, s.rateLimitRoutes()...)
	rs = append(rs, s.apiProtectionRoutes()...)
	rs = append(rs, s.verifyRoutes()...)
	rs = append(rs, s.trafficRoutes()...)
	rs = append(rs, s.documentRoutes()...)
	rs = append(rs, s.agentRoutes()...)
	rs = append(rs, s.accountRoutes()...)
	rs = append(rs, s.webhookRoutes()...)
	rs = append(rs, s.passwordRoutes()...)
	rs = append(rs, s.trustRoutes()...)
	rs = append(rs, s.messagingRoutes()...)
	rs = append(rs, s.brandingRoutes()...)
	rs = append(rs, s.consoleUserRoutes()...)
	rs = append(rs, s.passwordStatusRoutes()...)
	rs = append(rs, s.identityRoutes()...)
	rs = append(rs, s.journeyRoutes()...)
	return rs
}
