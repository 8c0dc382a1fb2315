// Package http owns the service's HTTP surface: the fasthttp listener, the
// route table (the single source of the router, /openapi.json and
// /postman-collection.json), middleware (request ids, common headers,
// ingress limits, body limits), the JSON codecs, the authenticators of
// server operations (auth.go), the one admin CRUD path of workspace-owned
// records (admin_resource.go) and the route files of the product areas
// that have no adapter of their own yet. An area with its own adapter (for
// example risk/api) hands its routes in through Config.Areas (area.go);
// this package never imports it.
//
// Decisions live in the product modules (verify, verify/widget,
// traffic/ratecheck, traffic/lease, traffic/admission, risk/apiprotection,
// identity/documents, agents, …): a route file decodes, authenticates,
// calls the module and encodes, and errors.go maps a module's errcode
// domain errors to statuses in one table. The hand-written hot body
// reader (flatjson.go: the rate-limit check and siteverify) is the one
// strict JSON scanner besides the reflective DecodeStrict (codec.go).
package http
