// Package http owns the service's HTTP surface: the fasthttp listener, the
// route table (the single source of the router, /openapi.json and
// /postman-collection.json), middleware (request ids, common headers,
// ingress limits, body limits), the JSON codecs, the authenticators of
// server operations (auth.go), the one admin CRUD path of workspace-owned
// records (admin_resource.go) and one route file per product module.
//
// Decisions live in the product modules (traffic/ratecheck, traffic/lease,
// traffic/admission, risk/apiprotection, identity/documents, agents, …):
// a route file decodes, authenticates, calls the module and encodes, and
// errors.go maps a module's errcode domain errors to statuses in one
// table. Human verification (hv_*.go) is the one product area whose logic
// is still here, reaching actors through cluster.Router; it moves to
// verify/ next.
package http
