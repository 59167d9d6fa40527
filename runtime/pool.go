package runtime

import (
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"time"
)

// The chunk pool runs ForChunks' chunks on long-lived worker goroutines that, after a call,
// keep polling for the next one for a short while (spinFor) before they sleep: a
// goroutine woken onto an idle core starts tens to hundreds of microseconds later on a
// virtual machine (the idle vCPU is halted), longer than a kernel call on a 64k batch takes,
// so a call that had to wake its helpers ran no faster on two cores than on one. OpenMP
// runtimes wait the same way between parallel regions (OMP_WAIT_POLICY, KMP_BLOCKTIME);
// here the wait is short, and yields to any other runnable goroutine (runtime.Gosched).
// Chunks are claimed in any order by whoever is free; each writes only its own state and
// the caller merges them in chunk order afterwards, so results do not depend on who ran what.

// spinFor is how long an idle worker polls for the next call before it sleeps, and how
// long a caller polls for its last chunks before it sleeps.
const spinFor = 100 * time.Microsecond

// job is one ForChunks call: chunks [0, n) of rows, claimed through next.
type job struct {
	fn      func(c, lo, hi int)
	n, rows int
	next    atomic.Int64 // the next unclaimed chunk
	done    atomic.Int64 // chunks finished
	fin     chan struct{}
}

// run claims and runs chunks until none is left; the goroutine that finishes the last one
// closes fin.
func (j *job) run() {
	for {
		c := int(j.next.Add(1) - 1)
		if c >= j.n {
			return
		}
		j.chunk(c)
	}
}

// chunk runs chunk c and counts it done, also when it leaves by runtime.Goexit (a test's
// t.FailNow), so that the caller's wait ends.
func (j *job) chunk(c int) {
	defer func() {
		if int(j.done.Add(1)) == j.n {
			close(j.fin)
		}
	}()
	j.fn(c, c*j.rows/j.n, (c+1)*j.rows/j.n)
}

var pool struct {
	busy sync.Mutex // held by the call the workers serve; others spawn goroutines
	gen  atomic.Uint64
	// cur is the call being served, nil between calls: a finished call's chunk function,
	// and the inputs and outputs it holds, stay reachable from nothing of the pool's.
	cur     atomic.Pointer[job]
	mu      sync.Mutex // guards workers and the sleepers' wait on wake
	wake    *sync.Cond
	workers int
}

func init() { pool.wake = sync.NewCond(&pool.mu) }

// worker serves every call published after the last it saw (pool.gen), polling for spinFor
// between calls, then sleeping until the next is published.
func worker() {
	defer func() { // a chunk that called runtime.Goexit ended this worker: let a call start another
		pool.mu.Lock()
		pool.workers--
		pool.mu.Unlock()
	}()
	var seen uint64
	for {
		g := pool.gen.Load()
		for start := time.Now(); g == seen; g = pool.gen.Load() {
			if time.Since(start) < spinFor {
				goruntime.Gosched()
				continue
			}
			pool.mu.Lock()
			for g = pool.gen.Load(); g == seen; g = pool.gen.Load() {
				pool.wake.Wait()
			}
			pool.mu.Unlock()
		}
		seen = g
		if j := pool.cur.Load(); j != nil { // nil: that call has finished already
			j.run()
		}
	}
}

// forChunksPooled runs the chunks on the calling goroutine and the pool's workers (started
// on first use: one fewer than GOMAXPROCS or the CPUs, whichever is fewer, so that polling
// workers never take a CPU from one running a chunk); it reports false, running nothing,
// when another call holds the pool.
func forChunksPooled(n, rows int, fn func(c, lo, hi int), procs int) bool {
	procs = min(procs, goruntime.NumCPU())
	if !pool.busy.TryLock() {
		return false
	}
	defer func() { // also when a chunk on this goroutine leaves by runtime.Goexit
		pool.cur.Store(nil)
		pool.busy.Unlock()
	}()
	j := &job{fn: fn, n: n, rows: rows, fin: make(chan struct{})}
	pool.mu.Lock()
	for ; pool.workers < procs-1; pool.workers++ {
		go worker()
	}
	pool.cur.Store(j)
	pool.gen.Add(1)
	pool.wake.Broadcast()
	pool.mu.Unlock()
	j.run()
	for start := time.Now(); int(j.done.Load()) < n && time.Since(start) < spinFor; {
		goruntime.Gosched()
	}
	<-j.fin
	return true
}
