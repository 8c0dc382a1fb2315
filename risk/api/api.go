// Package api is the risk area's HTTP adapter: the routes, contract
// bodies, admin validation and error vocabularies of API Protection,
// Account Defence, breached-password ranges, the Trust API and the
// messaging preflight. It decodes, authenticates through the transport's
// Call, calls the risk modules and encodes; it decides nothing (the
// decisions are risk/…'s) and constructs no module (node/ does, and wires
// the verify module in through ProofKeys and WidgetExchange).
package api

import (
	"github.com/trustd/trustd/platform/catalog"
	kernel "github.com/trustd/trustd/platform/http"
	"github.com/trustd/trustd/platform/token"
	"github.com/trustd/trustd/risk/account"
	"github.com/trustd/trustd/risk/apiprotection"
	"github.com/trustd/trustd/risk/messaging"
	"github.com/trustd/trustd/risk/passwords"
	"github.com/trustd/trustd/risk/trust"
)

// ProofKeys finds the live key that signed a step-up proof (the verify
// module's signing keys).
type ProofKeys interface {
	Verifier(cat *catalog.Catalog, keyID string) *token.Key
}

// WidgetExchange exchanges a human-verification response token of site
// exactly as /siteverify does (the same single-use marker), for
// /trust/siteverify; risk/trust decides what it proves.
type WidgetExchange interface {
	ExchangeWidget(cat *catalog.Catalog, site *catalog.Site, response, action string) (trust.WidgetToken, error)
}

// Deps are the modules the risk routes call, built by node/.
type Deps struct {
	Trust         *trust.Module
	Account       *account.Module
	APIProtection *apiprotection.Module
	Passwords     *passwords.Module
	Messaging     *messaging.Module
	// MessagingSealer seals rotated messaging secrets (the cluster key's).
	MessagingSealer *messaging.Sealer
	ProofKeys       ProofKeys
	Widgets         WidgetExchange
	// NodeID names this node in the breached-password corpus status.
	NodeID string
}

// The names of the risk areas, which place them in the contract
// documents.
const (
	AreaAPIProtection  = "risk/apiprotection"
	AreaAccount        = "risk/account"
	AreaPasswords      = "risk/passwords"
	AreaTrust          = "risk/trust"
	AreaMessaging      = "risk/messaging"
	AreaPasswordStatus = "risk/passwords/status"
)

// Areas are the risk area's operations, for the transport's route table.
func Areas(d Deps) []kernel.Area {
	pw := passwordsAPI{m: d.Passwords, node: d.NodeID}
	return []kernel.Area{
		{Name: AreaAPIProtection, Routes: apAPI{d.APIProtection}.routes()},
		{Name: AreaAccount, Routes: accountAPI{d.Account}.routes(), Errors: account.Errors},
		{Name: AreaPasswords, Routes: pw.routes(), Errors: passwords.Errors},
		{Name: AreaTrust, Routes: trustAPI{m: d.Trust, proofs: d.ProofKeys, widgets: d.Widgets}.routes(), Errors: trust.Errors},
		{Name: AreaMessaging, Routes: messagingAPI{m: d.Messaging, sealer: d.MessagingSealer}.routes(), Errors: messaging.Errors,
			Schemes: map[kernel.Auth]string{kernel.AuthMessaging: messagingSigDoc}},
		{Name: AreaPasswordStatus, Routes: pw.statusRoutes()},
	}
}
