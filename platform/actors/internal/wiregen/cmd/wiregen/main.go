// Command wiregen writes platform/actors/wire_gen.go; `go generate ./platform/actors/` runs
// it (see the directive in platform/actors/wire.go).
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/trustd/trustd/platform/actors/internal/wiregen"
)

func main() {
	actorsDir := flag.String("actors", ".", "the actors package folder")
	pbDir := flag.String("pb", "../proto/actorpb", "the folder of the actorpb messages")
	flag.Parse()
	if err := wiregen.WriteFile(*actorsDir, *pbDir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
