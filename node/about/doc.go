// Package about is the area of what a node says about itself and its API
// besides the contract documents: the service metadata (GET /, with the
// links to everything else), the contract's changelog and the user guide's
// pages. node/ hands it to the transport like any area; the transport
// keeps rendering /openapi.json and the Postman collection from its route
// table. It only describes: it decides nothing and never writes state.
package about
