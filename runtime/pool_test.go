package runtime

import (
	"fmt"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// forChunksCalls records which rows each chunk of one ForChunks call was given, and how
// often it ran.
func forChunksCalls(n, rows int) (runs []int32, bounds [][2]int) {
	counts := make([]atomic.Int32, n)
	bounds = make([][2]int, n)
	ForChunks(n, rows, func(c, lo, hi int) {
		counts[c].Add(1)
		bounds[c] = [2]int{lo, hi}
	})
	runs = make([]int32, n)
	for c := range counts {
		runs[c] = counts[c].Load()
	}
	return runs, bounds
}

// TestForChunksOnce checks that every chunk runs exactly once on its rows
// [c·rows/n, (c+1)·rows/n), serially (GOMAXPROCS 1) and on the pool (2, 8).
func TestForChunksOnce(t *testing.T) {
	for _, procs := range []int{1, 2, 8} {
		t.Run(fmt.Sprintf("procs=%d", procs), func(t *testing.T) {
			defer goruntime.GOMAXPROCS(goruntime.GOMAXPROCS(procs))
			forChunksCalls(0, 10) // no chunks: returns at once
			for _, n := range []int{1, 2, 3, 8, 64} {
				for _, rows := range []int{0, 5, 1000} {
					for range 20 {
						runs, bounds := forChunksCalls(n, rows)
						for c := range n {
							if want := [2]int{c * rows / n, (c + 1) * rows / n}; runs[c] != 1 || bounds[c] != want {
								t.Fatalf("n=%d rows=%d chunk %d: ran %d times on %v, want once on %v", n, rows, c, runs[c], bounds[c], want)
							}
						}
					}
				}
			}
		})
	}
}

// TestForChunksConcurrentCallers calls ForChunks from several goroutines at once (one holds
// the pool, the others run their chunks on goroutines of their own) and from inside a
// chunk: every call still runs each of its chunks exactly once, and returns only after.
func TestForChunksConcurrentCallers(t *testing.T) {
	defer goruntime.GOMAXPROCS(goruntime.GOMAXPROCS(4))
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				n := 1 + (g+i)%9
				var inner atomic.Int32
				runs, _ := forChunksCalls(n, 100)
				ForChunks(3, 30, func(c, lo, hi int) {
					r, _ := forChunksCalls(4, 8) // nested: the pool is held by the outer call
					for _, k := range r {
						inner.Add(k)
					}
				})
				for c, k := range runs {
					if k != 1 {
						errs <- fmt.Errorf("goroutine %d call %d: chunk %d of %d ran %d times", g, i, c, n, k)
						return
					}
				}
				if inner.Load() != 12 {
					errs <- fmt.Errorf("goroutine %d call %d: nested chunks ran %d times, want 12", g, i, inner.Load())
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestForChunksReleasesTheCall checks that the workers keep nothing of a finished call: what
// its chunk function holds (a kernel's inputs and outputs) can be collected.
func TestForChunksReleasesTheCall(t *testing.T) {
	defer goruntime.GOMAXPROCS(goruntime.GOMAXPROCS(2))
	freed := make(chan struct{})
	func() {
		big := &[1 << 16]byte{}
		goruntime.SetFinalizer(big, func(*[1 << 16]byte) { close(freed) })
		ForChunks(4, 8, func(c, lo, hi int) { big[c] = byte(lo) })
	}()
	for range 200 {
		goruntime.GC()
		select {
		case <-freed:
			return
		default:
			time.Sleep(time.Millisecond)
		}
	}
	t.Fatal("the chunk function of a finished ForChunks is still reachable")
}

// TestForChunksGoexit: a chunk that leaves by runtime.Goexit on a worker still counts as
// done (the call returns), and the next call gets a worker again.
func TestForChunksGoexit(t *testing.T) {
	defer goruntime.GOMAXPROCS(goruntime.GOMAXPROCS(2))
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 20 {
			ForChunks(8, 8, func(c, lo, hi int) {
				if c == 7 {
					goruntime.Goexit()
				}
			})
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("ForChunks did not return after a chunk's Goexit")
	}
	runs, _ := forChunksCalls(8, 8)
	for c, k := range runs {
		if k != 1 {
			t.Fatalf("after Goexits, chunk %d ran %d times", c, k)
		}
	}
}
