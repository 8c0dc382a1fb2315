// Package etag is the one place the service compares entity tags: the
// widget's assets and the branding logo and stylesheet answer 304 by it.
package etag

import "strings"

// Matches is the weak comparison of If-None-Match (RFC 9110 13.1.2): true
// when the header lists "*" or any of tags, with or without W/.
func Matches(ifNoneMatch string, tags ...string) bool {
	for _, part := range strings.Split(ifNoneMatch, ",") {
		part = strings.TrimPrefix(strings.TrimSpace(part), "W/")
		if part == "" {
			continue
		}
		if part == "*" {
			return true
		}
		for _, t := range tags {
			if part == t {
				return true
			}
		}
	}
	return false
}
