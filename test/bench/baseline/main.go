// Command baseline serves the bare fasthttp + fastjson rate-limit baseline
// that trustbench divides every trustd figure by:
//
//	go run ./test/bench/baseline --addr 127.0.0.1:8099
//
// --cpuprofile FILE writes a CPU profile of the whole run (until SIGTERM or
// SIGINT), to compare with a profile of trustd taken under the same load.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"github.com/trustd/trustd/test/bench/baseline/server"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8099", "listen address")
	profile := flag.String("cpuprofile", "", "write a CPU profile of the run to this file")
	flag.Parse()
	if *profile != "" {
		f, err := os.Create(*profile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	stop, err := server.Start(*addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("baseline listening on http://%s%s\n", *addr, server.CheckPath)
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	<-ctx.Done()
	stop()
}
