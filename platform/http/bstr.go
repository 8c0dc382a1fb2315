package http

import "unsafe"

// bstr views b as a string without copying; the caller must not keep it
// past the request.
func bstr(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}
