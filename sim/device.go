package sim

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strings"
)

// hostDevice describes the CPU: its model (from /proc/cpuinfo on Linux)
// and the logical CPUs the program may use, e.g. "AMD EPYC 9654 96-Core
// Processor, 2 logical CPUs"; "" under WebAssembly.
func hostDevice() string {
	if runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		return ""
	}
	model := runtime.GOARCH
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			k, v, ok := strings.Cut(sc.Text(), ":")
			if ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	return fmt.Sprintf("%s, %d logical CPUs", model, runtime.GOMAXPROCS(0))
}
