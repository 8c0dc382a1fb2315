// Package upgrade holds the rolling-upgrade system test: it builds the
// previous release's trustd (the commit in deploy/upgrade/PREVIOUS) and
// this tree's, starts a three-node cluster of the previous release with
// mutual TLS between nodes, and replaces its nodes one at a time with the
// current build under a steady load, as docs/operations.md tells an
// operator to. It owns no code: only the test.
package upgrade
