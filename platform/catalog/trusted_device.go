package catalog

import (
	"errors"
	"fmt"
	"maps"
	"time"
)

// Trusted devices (Account Defence, spec 3.6): a customer marks a device
// as trusted for one of its subjects, and later assessments of that
// subject from that device carry less new-device risk. A customer would
// call the loss of this data lost data, so it lives here, in Raft. Subject
// and device are stored only as keyed hashes (the workspace's ScopeKey);
// a workspace holds at most MaxTrustedDevicesPerWorkspace and a subject
// MaxTrustedDevicesPerSubject, and a trust lapses TrustedDeviceRetention
// after it was last given, so no tenant grows the catalog without bound.
//
// The table is nested, workspace → subject → device, so a command copies
// only the workspace and subject it changes, never the whole table.

// Caps and retention of trusted devices.
const (
	MaxTrustedDevicesPerSubject   = 20
	MaxTrustedDevicesPerWorkspace = 100_000
	TrustedDeviceRetention        = 180 * 24 * time.Hour
	MaxTrustedDeviceLabel         = 64
)

// ErrTrustedDevicesFull is returned by TrustDevice when the subject or the
// workspace holds as many live trusted devices as allowed.
var ErrTrustedDevicesFull = errors.New("catalog: trusted devices full")

// TrustedDevice is one device trusted for one subject.
type TrustedDevice struct {
	SubjectHash string    `json:"subject_hash"`
	DeviceHash  string    `json:"device_hash"`
	Label       string    `json:"label"`
	TrustedAt   time.Time `json:"trusted_at"`
	ExpiresAt   time.Time `json:"expires_at"`
}

// WorkspaceDevices are one workspace's trusted devices by subject hash,
// then device hash; Count is the number of records.
type WorkspaceDevices struct {
	Count    int                                  `json:"count"`
	Subjects map[string]map[string]*TrustedDevice `json:"subjects"`
}

// TrustedDevice returns the live trust of device for subject in a
// workspace, or nil.
func (c *Catalog) TrustedDevice(workspaceID, subjectHash, deviceHash string, now time.Time) *TrustedDevice {
	w := c.TrustedDevices[workspaceID]
	if w == nil {
		return nil
	}
	d := w.Subjects[subjectHash][deviceHash]
	if d == nil || !now.Before(d.ExpiresAt) {
		return nil
	}
	return d
}

// TrustedDeviceCount is how many trusted-device records a workspace holds
// (lapsed ones included until a command prunes them).
func (c *Catalog) TrustedDeviceCount(workspaceID string) int {
	if w := c.TrustedDevices[workspaceID]; w != nil {
		return w.Count
	}
	return 0
}

// trustedDevicesOf returns workspace's table, copied once per transaction
// for writing, and its subject's device map, likewise copied.
func (tx *Tx) trustedDevicesOf(workspaceID, subjectHash string) (*WorkspaceDevices, map[string]*TrustedDevice) {
	all := Writable(tx, "trusted_devices", &tx.next.TrustedDevices)
	wkey := "trusted_devices/" + workspaceID
	w := all[workspaceID]
	if !tx.cloned[wkey] {
		nw := &WorkspaceDevices{Subjects: map[string]map[string]*TrustedDevice{}}
		if w != nil {
			nw.Count, nw.Subjects = w.Count, maps.Clone(w.Subjects)
		}
		w = nw
		all[workspaceID] = w
		tx.cloned[wkey] = true
	}
	skey := wkey + "/" + subjectHash
	if !tx.cloned[skey] {
		w.Subjects[subjectHash] = maps.Clone(w.Subjects[subjectHash])
		if w.Subjects[subjectHash] == nil {
			w.Subjects[subjectHash] = map[string]*TrustedDevice{}
		}
		tx.cloned[skey] = true
	}
	return w, w.Subjects[subjectHash]
}

// pruneLapsed drops the lapsed devices of one subject map.
func pruneLapsed(w *WorkspaceDevices, devs map[string]*TrustedDevice, now time.Time) {
	for h, d := range devs {
		if !now.Before(d.ExpiresAt) {
			delete(devs, h)
			w.Count--
		}
	}
}

// TrustDevice trusts a device for a subject until At + TrustedDeviceRetention,
// or refreshes an existing trust and its label.
type TrustDevice struct {
	WorkspaceID string    `json:"workspace_id"`
	SubjectHash string    `json:"subject_hash"`
	DeviceHash  string    `json:"device_hash"`
	Label       string    `json:"label"`
	At          time.Time `json:"at"`
}

func (*TrustDevice) Kind() string { return "trusted_device.trust" }
func (c *TrustDevice) Apply(tx *Tx) (any, error) {
	if _, ok := tx.next.Workspaces[c.WorkspaceID]; !ok {
		return nil, fmt.Errorf("%w: workspace %s", ErrNotFound, c.WorkspaceID)
	}
	if c.SubjectHash == "" || c.DeviceHash == "" || len(c.Label) > MaxTrustedDeviceLabel {
		return nil, fmt.Errorf("%w: a trusted device needs subject and device hashes and a label of at most %d bytes", ErrConflict, MaxTrustedDeviceLabel)
	}
	w, devs := tx.trustedDevicesOf(c.WorkspaceID, c.SubjectHash)
	pruneLapsed(w, devs, c.At)
	_, exists := devs[c.DeviceHash]
	if !exists {
		if len(devs) >= MaxTrustedDevicesPerSubject {
			return nil, fmt.Errorf("%w: the subject has %d trusted devices, the most allowed; revoke one first", ErrTrustedDevicesFull, len(devs))
		}
		if w.Count >= MaxTrustedDevicesPerWorkspace {
			// Reclaim lapsed trusts of every subject before refusing.
			for s := range w.Subjects {
				if s != c.SubjectHash {
					_, other := tx.trustedDevicesOf(c.WorkspaceID, s)
					pruneLapsed(w, other, c.At)
					if len(other) == 0 {
						delete(w.Subjects, s)
					}
				}
			}
			if w.Count >= MaxTrustedDevicesPerWorkspace {
				return nil, fmt.Errorf("%w: the workspace has %d trusted devices, the most allowed", ErrTrustedDevicesFull, w.Count)
			}
		}
		w.Count++
	}
	d := &TrustedDevice{SubjectHash: c.SubjectHash, DeviceHash: c.DeviceHash, Label: c.Label,
		TrustedAt: c.At, ExpiresAt: c.At.Add(TrustedDeviceRetention)}
	devs[c.DeviceHash] = d
	return d, nil
}

// RevokeDevice withdraws a device's trust for a subject. Revoking a device
// that is not trusted changes nothing and is not an error, so a retried
// revoke answers the same.
type RevokeDevice struct {
	WorkspaceID string    `json:"workspace_id"`
	SubjectHash string    `json:"subject_hash"`
	DeviceHash  string    `json:"device_hash"`
	At          time.Time `json:"at"`
}

// RevokeResult says whether a trust was withdrawn.
type RevokeResult struct {
	WasTrusted bool
}

func (*RevokeDevice) Kind() string { return "trusted_device.revoke" }
func (c *RevokeDevice) Apply(tx *Tx) (any, error) {
	if _, ok := tx.next.Workspaces[c.WorkspaceID]; !ok {
		return nil, fmt.Errorf("%w: workspace %s", ErrNotFound, c.WorkspaceID)
	}
	w := tx.next.TrustedDevices[c.WorkspaceID]
	if w == nil || w.Subjects[c.SubjectHash][c.DeviceHash] == nil {
		return &RevokeResult{}, nil
	}
	w, devs := tx.trustedDevicesOf(c.WorkspaceID, c.SubjectHash)
	d := devs[c.DeviceHash]
	delete(devs, c.DeviceHash)
	w.Count--
	pruneLapsed(w, devs, c.At)
	if len(devs) == 0 {
		delete(w.Subjects, c.SubjectHash)
	}
	return &RevokeResult{WasTrusted: c.At.Before(d.ExpiresAt)}, nil
}

func deleteTrustedDevicesOf(tx *Tx, workspaceID string) {
	if _, ok := tx.next.TrustedDevices[workspaceID]; ok {
		delete(Writable(tx, "trusted_devices", &tx.next.TrustedDevices), workspaceID)
	}
}
