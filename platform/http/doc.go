// Package http is the transport kernel: the fasthttp listener, the route
// table (the single source of the router, /openapi.json and the Postman
// collection, rendered in contract.go), middleware (request ids, common
// headers, ingress limits, body limits, the panic guard, metrics and
// traces), the JSON codecs, the authenticators of server operations
// (auth.go), the one generic admin CRUD path (Resource) and the mechanism
// of the error table (errors.go). It holds no product route, DTO,
// validation or decision: every area, and the node's own about and ops
// areas, hands its routes in through Config.Areas (area.go), and this
// package never imports them (area_test.go keeps it so).
//
// Decisions live in the product modules (verify, traffic/ratecheck,
// risk/apiprotection, identity/documents, agents, …) behind their areas'
// adapters, which decode, authenticate, call the module and encode; a
// module's errcode domain errors map to statuses in one table here. Bodies
// decode strictly (DecodeStrict, codec.go); the hot paths' hand-written
// scanner is platform/lib/jsonstrict's.
package http
