package wasmk

import "sync"

// Funcs returns a function that loads the module code on its first call
// and returns the module's exported functions names, in order, then the
// same on every call: the error of the load, or of an export the module
// lacks, every time (the caller keeps its Go code). It is how a package
// holds its kernels (outside js/wasm the error is ErrUnavailable).
func Funcs(code []byte, names ...string) func() ([]Func, error) {
	return sync.OnceValues(func() ([]Func, error) {
		m, err := Load(code)
		if err != nil {
			return nil, err
		}
		fs := make([]Func, len(names))
		for i, name := range names {
			if fs[i], err = m.Func(name); err != nil {
				return nil, err
			}
		}
		return fs, nil
	})
}
