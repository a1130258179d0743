package experiments

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// fp8labModule is the module path whose go.mod marks the repository root.
const fp8labModule = "github.com/fp8lab/fp8lab"

// moduleRoot returns the root of the fp8lab module, so that experiments
// reading files of the repository (the H200 captures, testdata) find them
// whatever the directory the program runs in. It walks up to the folder
// whose go.mod declares the module from, in turn: the working directory,
// the folder of the running executable (bin/lab of a checkout), and the
// folder this file was compiled from (a binary built without -trimpath,
// run anywhere on the machine that built it). The error says where it
// looked; in the browser (js/wasm), which has no file system, it says so.
func moduleRoot() (string, error) {
	if runtime.GOOS == "js" {
		return "", errors.New("a browser run has no file system: the repository's files (the H200 captures) are read by server and terminal runs only")
	}
	var starts, tried []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if exe, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		starts = append(starts, filepath.Dir(exe))
	}
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		starts = append(starts, filepath.Dir(file))
	}
	for _, start := range starts {
		root, err := moduleRootFrom(start)
		if err == nil {
			return root, nil
		}
		tried = append(tried, start)
	}
	return "", fmt.Errorf("the %s module was not found above %s (run inside a checkout, or set $%s)",
		fp8labModule, strings.Join(tried, ", "), contractionCapturesEnv)
}

// moduleRootFrom walks up from dir to the folder whose go.mod declares the
// fp8lab module.
func moduleRootFrom(dir string) (string, error) {
	for {
		if f, err := os.Open(filepath.Join(dir, "go.mod")); err == nil {
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				if fields := strings.Fields(sc.Text()); len(fields) == 2 && fields[0] == "module" {
					if p, err := strconv.Unquote(fields[1]); err == nil {
						fields[1] = p
					}
					if fields[1] == fp8labModule {
						f.Close()
						return dir, nil
					}
					break
				}
			}
			f.Close()
		} else if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod declaring %s above %s", fp8labModule, dir)
		}
		dir = parent
	}
}
