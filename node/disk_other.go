//go:build !(linux || darwin || freebsd)

package node

// diskSpace is not measured on this platform: the disk metrics are absent.
func diskSpace(string) (free, size uint64, ok bool) { return 0, 0, false }
