// Command contention runs the workload that benches/ratios.rs runs with
// syncprof, in Go, so that the two runtimes' profiling overheads can be put
// side by side: N workers take one sync.Mutex in a loop, hold it for a
// critical section of about 50 ns, and release it.
//
// With -profile=on, the block profile rate is 1 and the mutex profile
// fraction is 1 (every event recorded), as syncprof's "on" case. It prints one
// line: "ops_per_sec <N>".
package main

import (
	"flag"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

var sink uint64

// work spins for `iters` steps of a dependent multiply-add chain.
func work(iters int) uint64 {
	x := uint64(1)
	for i := 0; i < iters; i++ {
		x = x*6364136223846793005 + uint64(i)
	}
	return x
}

// calibrate returns the number of work steps that take about target: the
// fastest of several probes, so a cold start or a frequency ramp does not
// skew it.
func calibrate(target time.Duration) int {
	const probe = 1_000_000
	perStep := 0.0
	for i := 0; i < 7; i++ {
		start := time.Now()
		sink += work(probe)
		t := float64(time.Since(start)) / probe
		if i == 0 || t < perStep {
			perStep = t
		}
	}
	n := int(float64(target) / perStep)
	if n < 1 {
		n = 1
	}
	return n
}

func main() {
	profile := flag.String("profile", "off", "on: block rate 1 and mutex fraction 1; off: both 0")
	workers := flag.Int("workers", 4, "number of contending goroutines")
	duration := flag.Duration("duration", 2*time.Second, "how long to run")
	critical := flag.Duration("critical", 50*time.Nanosecond, "critical section length")
	fixedIters := flag.Int("iters", 0, "work steps per critical section (overrides -critical's calibration)")
	flag.Parse()

	if *profile == "on" {
		runtime.SetBlockProfileRate(1)
		runtime.SetMutexProfileFraction(1)
	} else {
		runtime.SetBlockProfileRate(0)
		runtime.SetMutexProfileFraction(0)
	}
	iters := *fixedIters
	if iters <= 0 {
		iters = calibrate(*critical)
	}

	var mu sync.Mutex
	var shared uint64
	var stop atomic.Bool
	var ops atomic.Uint64
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < *workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var local uint64
			for !stop.Load() {
				mu.Lock()
				shared += work(iters)
				mu.Unlock()
				local++
			}
			ops.Add(local)
		}()
	}
	time.Sleep(*duration)
	stop.Store(true)
	wg.Wait()
	elapsed := time.Since(start)
	sink += shared
	fmt.Printf("ops_per_sec %.0f\n", float64(ops.Load())/elapsed.Seconds())
}
