package node

import (
	catalogapi "github.com/trustd/trustd/platform/catalog/api"
	api "github.com/trustd/trustd/platform/http"
)

// newCatalogAdmin is the catalog's admin area: tenancy records and the
// signing keys, whose rotation waits until every member applied the new
// key.
func (n *Node) newCatalogAdmin() []api.Area {
	return catalogapi.Areas(catalogapi.Deps{Store: n.store, Members: n.cluster})
}
