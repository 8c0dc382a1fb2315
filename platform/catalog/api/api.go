// Package api is the catalog's admin adapter: the tenancy records
// (workspaces, sites, mobile apps, scoped credentials) and the cluster's
// signing keys, with their contract bodies and validation. It decodes,
// validates and replicates catalog commands through the transport's Call;
// the records and their rules are the catalog's. It constructs nothing:
// node/ hands it the store and the cluster's member status. Credential
// authentication, which reads the same records on every request, stays in
// the transport.
package api

import (
	"time"

	"github.com/trustd/trustd/platform/catalog"
	kernel "github.com/trustd/trustd/platform/http"
)

// The names of the catalog's areas, which place them in the contract
// documents.
const (
	AreaTenancy = "catalog/tenancy"
	AreaKeys    = "catalog/keys"
)

// Store is the replicated catalog (persistence.Store).
type Store interface {
	Catalog() *catalog.Catalog
}

// Deps are what the catalog's admin operations need, built by node/.
type Deps struct {
	Store Store
	// Members is the cluster's status, which a key rotation waits on; nil
	// for a node outside a cluster.
	Members Members
	// Now is the time source; default time.Now.
	Now func() time.Time
}

// Areas are the catalog's admin operations.
func Areas(d Deps) []kernel.Area {
	if d.Now == nil {
		d.Now = time.Now
	}
	return []kernel.Area{
		{Name: AreaTenancy, Routes: tenancyAPI{}.routes()},
		{Name: AreaKeys, Routes: keysAPI{store: d.Store, members: d.Members, now: d.Now}.routes()},
	}
}
