// Command gendefault builds the embedded default password corpus (run by
// go generate in risk/passwords): it reads the ranked list of
// @zxcvbn-ts/language-common (installed, pinned, by
// test/system/passwords/setup.sh) and writes default/sha1.pwd.gz and
// default/ntlm.pwd.gz. The output is deterministic, so a test can rebuild
// it and compare.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/trustd/trustd/risk/passwords"
)

func main() {
	list := flag.String("list", "", "the package's src/passwords.json (a JSON array of passwords, most common first)")
	out := flag.String("out", "default", "output directory")
	flag.Parse()
	if err := passwords.GenerateDefault(*list, *out); err != nil {
		fmt.Fprintln(os.Stderr, "gendefault:", err)
		os.Exit(1)
	}
}
