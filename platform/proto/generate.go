// Package proto holds the .proto files of everything that crosses a node
// (Raft log records, forwarded actor messages) and their generated Go code,
// which is committed. Regenerate after editing a .proto file with
//
//	go generate ./platform/proto/
//
// which needs protoc (Debian: protobuf-compiler) and protoc-gen-go
// (go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.8).
package proto

//go:generate protoc --go_out=. --go_opt=module=github.com/trustd/trustd/platform/proto raft.proto peer.proto shardops.proto
