// Package verify decides human verification (spec sections 2, 4.11 to
// 4.13): the widget's challenge and proof of work, visual puzzles, the
// score of a redeem, the response token, the siteverify verdict and its
// drop-in dialects' answers, the developer sandbox, edge pre-clearance and
// detection feedback. Subpackage widget holds the browser widget's assets.
//
// It never sees HTTP: the transport parses bodies and headers, resolves
// the caller (site key and origin, site secret, mobile secret) and calls
// a Module method with plain values; the answer is a value or an errcode
// domain error. State is reached only through an Asker (the cluster
// router): single-use markers, velocity counters and verifications.
package verify
