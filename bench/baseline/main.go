// Command baseline serves the bare fasthttp + fastjson rate-limit baseline
// that trustbench divides every trustd figure by:
//
//	go run ./bench/baseline --addr 127.0.0.1:8099
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/trustd/trustd/bench/baseline/server"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8099", "listen address")
	flag.Parse()
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
