package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/lossgen/lossgen/gen/runner"
)

// scratchDir makes a temporary directory for the temporary modules the command builds
// kernels in (runner.TempRoot) and removes it, with everything in it, when the returned done
// is called, or when SIGINT or SIGTERM arrives first: the command then says so and exits
// with status 130. The handler is in place before the directory exists and the modules are
// made inside it, so an eval or bench interrupted at any step (making a module, go build,
// go test -bench) leaves nothing behind.
func scratchDir(cmd string, stderr io.Writer) (done func(), err error) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	dir, err := os.MkdirTemp("", "lossgen-"+cmd+"-")
	if err != nil {
		signal.Stop(ch)
		return nil, err
	}
	runner.TempRoot = dir
	stop := make(chan struct{})
	go func() {
		select {
		case sig := <-ch:
			// A go build or go test the signal also reached may still be writing: remove
			// until nothing is left.
			for range 10 {
				if os.RemoveAll(dir) == nil {
					break
				}
			}
			fmt.Fprintf(stderr, "%s: interrupted (%v signal received); removed its temporary modules\n", cmd, sig)
			os.Exit(130)
		case <-stop:
		}
	}()
	return func() {
		signal.Stop(ch)
		close(stop)
		runner.TempRoot = ""
		os.RemoveAll(dir)
	}, nil
}
