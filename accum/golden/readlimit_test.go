package golden

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadFileBounded: ReadFile refuses what is no capture from its first
// bytes (`lab verify /dev/zero` used to read without end) and a file past
// MaxFileBytes, compressed or not, with an error naming the limit.
func TestReadFileBounded(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err == nil {
		if _, err := ReadFile("/dev/zero"); err == nil || !strings.Contains(err.Error(), "unknown kind of file") {
			t.Errorf("/dev/zero: %v", err)
		}
	}
	defer func(n int) { MaxFileBytes = n }(MaxFileBytes)
	MaxFileBytes = 1 << 20
	big := []byte(LongMagic + "\n" + strings.Repeat("# padding\n", 200000)) // 2 MB
	dir := t.TempDir()
	plain := filepath.Join(dir, "big.txt")
	os.WriteFile(plain, big, 0o644)
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(big)
	zw.Close()
	packed := filepath.Join(dir, "big.txt.gz")
	os.WriteFile(packed, z.Bytes(), 0o644)
	for _, p := range []string{plain, packed} {
		if _, err := ReadFile(p); err == nil || !strings.Contains(err.Error(), "larger than 1 MiB") {
			t.Errorf("%s: %v, want the size limit", filepath.Base(p), err)
		}
	}
}
