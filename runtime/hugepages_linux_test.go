package runtime

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
	"unsafe"

	"github.com/lossgen/lossgen/runtime/internal/check"
)

// vmFlags returns the VmFlags of the mapping of /proc/self/smaps that holds address a.
func vmFlags(t *testing.T, a uintptr) []string {
	f, err := os.Open("/proc/self/smaps")
	check.NoError(t, err)
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		var lo, hi uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x", &lo, &hi); n == 2 && strings.Contains(line, " ") && !strings.Contains(line[:strings.Index(line, " ")], ":") {
			in = lo <= a && a < hi
			continue
		}
		if rest, ok := strings.CutPrefix(line, "VmFlags:"); ok && in {
			return strings.Fields(rest)
		}
	}
	check.NoError(t, sc.Err())
	t.Fatalf("no mapping holds %#x", a)
	return nil
}

// TestHugePages checks that HugePages marks a large slice's whole huge pages for huge pages
// (the kernel lists the mapping's VmFlags with hg) and changes no value, and that slices
// with no whole huge page inside, empty or of any element size, are left alone.
func TestHugePages(t *testing.T) {
	if _, err := os.Stat("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil {
		t.Skip("this kernel has no transparent huge pages")
	}
	s := make([]float32, 8<<20) // 32 MiB: whole huge pages inside, whatever its alignment
	for i := range 1024 {
		s[i] = float32(i)
	}
	HugePages(s)
	for i := range 1024 {
		check.Equal(t, float32(i), s[i])
	}
	mid := uintptr(unsafe.Pointer(&s[len(s)/2]))
	check.Contains(t, vmFlags(t, mid), "hg")
	for i := range s {
		s[i] = 1
	}
	HugePages([]float64(nil))
	HugePages(make([]bool, 3))
	HugePages(make([]int64, 1<<18)[1:]) // 2 MiB, unaligned: at most one whole huge page
}
