package runtime

import "golang.org/x/sys/cpu"

// AVX2 reports whether generated packages run their AVX2 kernels here: the CPU has AVX2 and
// FMA (the kernels also use AVX, which AVX2 implies) and PureGo does not ask for the pure-Go
// kernels. A generated package registers its AVX2 implementation when it holds.
func AVX2() bool { return cpu.X86.HasAVX2 && cpu.X86.HasFMA && !PureGo() }
