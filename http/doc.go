// Package http owns the service's HTTP surface: the fasthttp listener, the
// route table (the single source of the router, /openapi.json and
// /postman-collection.json), middleware (request ids, common headers,
// ingress limits, body limits), the JSON codec and one file per API module.
//
// Handlers reach per-key state only through cluster.Router (building the
// actors package's ops and reading their results; never a shard directly)
// and durable state only through the catalog store. Product modules return
// errcode domain errors, which errors.go maps to statuses in one table.
package http
