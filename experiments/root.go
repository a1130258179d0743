package experiments

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// fp8labModule is the module path whose go.mod marks the repository root.
const fp8labModule = "github.com/fp8lab/fp8lab"

// moduleRoot walks up from the working directory to the folder whose go.mod
// declares the fp8lab module: experiments that read files of the repository
// (the H200 captures, testdata) find them from there, whatever the
// directory the program runs in.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
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
			return "", fmt.Errorf("not inside the %s module (no go.mod declaring it above the working directory)", fp8labModule)
		}
		dir = parent
	}
}
