package runtime

import (
	"os"
	"sync"

	"golang.org/x/sys/cpu"
)

// AVX2 reports whether generated packages run their AVX2 kernels here: the CPU has AVX2 and
// FMA (the kernels also use AVX, which AVX2 implies) and PureGo does not ask for the pure-Go
// kernels. A generated package registers its AVX2 implementation when it holds.
func AVX2() bool { return cpu.X86.HasAVX2 && cpu.X86.HasFMA && !PureGo() }

// AVX512 reports whether the AVX2 implementation of generated packages runs the 16-lane
// AVX-512 variants of the passes that have one: AVX2 holds, the CPU and the OS support
// AVX-512 F, DQ and VL (ZMM registers, mask registers, VPMOVM2D), and LOSSGEN_AVX512 is not
// set to a false value (0, false, off, no: envOn). The variants give the
// AVX2 passes' results bit for bit; the switch is there to measure one against the other.
func AVX512() bool {
	return AVX2() && cpu.X86.HasAVX512F && cpu.X86.HasAVX512DQ && cpu.X86.HasAVX512VL && !noAVX512()
}

var noAVX512 = sync.OnceValue(func() bool {
	v := os.Getenv("LOSSGEN_AVX512")
	return v != "" && !envOn(v) // only a false value turns them off
})
