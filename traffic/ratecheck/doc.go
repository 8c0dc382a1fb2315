// Package ratecheck decides a rate-limit check (spec 2.10, 2.11, 4.10,
// 7.3): it compiles each catalog version's policies once, matches a
// request to them, reserves on every matched bucket through the cluster's
// Asker (refunding when the applied decision is not allow), folds the
// outcomes, and counts what each policy did. It never sees HTTP: the
// transport parses the body, authenticates the caller, calls Check and
// appends the Result's JSON. It never blocks except on the Asker.
package ratecheck
