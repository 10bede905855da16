// Command cpuhog runs a command while busy loops keep the machine's cores busy: `make
// test-stress` runs the end-to-end suite under it, so that the suite meets a machine as loaded as
// a busy CI runner. Usage:
//
//	cpuhog [-workers N] [-max D] -- COMMAND [ARG...]
//
// It starts N busy loops (goroutines that never block: N cores' worth of work, at the default
// scheduling priority; N is the number of CPUs by default), then the command, and stops the loops
// as soon as the command exits or -max (1 h by default) has passed, whichever comes first. It
// exits with the command's exit status (1 when it could not start it). SIGINT and SIGTERM are
// passed on to the command, and the command is killed (SIGKILL) if cpuhog dies: the busy loops
// live in cpuhog's own process, so nothing of them outlives it.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	workers := flag.Int("workers", runtime.NumCPU(), "busy loops to run (each keeps one core busy)")
	maxDur := flag.Duration("max", time.Hour, "stop the busy loops after this long even if the command still runs")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: cpuhog [-workers N] [-max D] -- COMMAND [ARG...]")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 || *workers < 0 {
		flag.Usage()
		os.Exit(2)
	}
	os.Exit(run(*workers, *maxDur, flag.Args()))
}

// run starts the busy loops and the command, and returns the command's exit status.
func run(workers int, maxDur time.Duration, args []string) int {
	if runtime.GOMAXPROCS(0) < workers+1 {
		runtime.GOMAXPROCS(workers + 1) // the loops, and this goroutine to wait and forward signals
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			spin(&stop)
		}()
	}
	timer := time.AfterFunc(maxDur, func() {
		stop.Store(true)
		fmt.Fprintf(os.Stderr, "cpuhog: -max %v passed: busy loops stopped, the command runs on\n", maxDur)
	})
	defer func() {
		timer.Stop()
		stop.Store(true)
		wg.Wait()
		fmt.Fprintf(os.Stderr, "cpuhog: %d busy loops stopped after %v\n", workers, time.Since(start).Round(time.Second))
	}()
	fmt.Fprintf(os.Stderr, "cpuhog: %d busy loops (of %d CPUs) while running: %s\n", workers, runtime.NumCPU(), strings.Join(args, " "))

	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "cpuhog: %v\n", err)
		return 1
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for {
		select {
		case s := <-sigs:
			_ = cmd.Process.Signal(s)
		case err := <-done:
			var exit *exec.ExitError
			switch {
			case err == nil:
				return 0
			case errors.As(err, &exit) && exit.ExitCode() >= 0:
				return exit.ExitCode()
			default:
				fmt.Fprintf(os.Stderr, "cpuhog: %s: %v\n", args[0], err)
				return 1
			}
		}
	}
}

// spin keeps one core busy until stop is set.
func spin(stop *atomic.Bool) {
	x := uint64(1)
	for !stop.Load() {
		for range 1 << 16 {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	sink.Add(x)
}

// sink keeps the loops' work from being optimized away.
var sink atomic.Uint64
