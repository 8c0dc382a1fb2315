package http

// RestoreSnapshotID is the operation id of the backup restore (node/ops),
// whose body limit fitSnapshotLimit sets.
const RestoreSnapshotID = "restoreSnapshot"

// fitSnapshotLimit bounds a restore's archive by the largest body any
// other route already accepts (the identity face steps, an area's route),
// so the snapshot route does not raise what the server reads before
// routing.
func fitSnapshotLimit(rs []Route) {
	limit, at := 0, -1
	for i := range rs {
		if rs[i].ID == RestoreSnapshotID {
			at = i
			continue
		}
		limit = max(limit, rs[i].MaxBody)
	}
	if at >= 0 {
		rs[at].MaxBody = limit
	}
}
