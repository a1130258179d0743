package sim

// FileRole is one input file of an experiment that reads files: its flag
// name and doc, and whether it may name a folder.
type FileRole struct {
	Name, Doc string
	Dir       bool
}

// FileExperiment is an experiment whose inputs include files named outside
// its parameters (parameters have no free-text kind): cmd/lab gives each
// role a flag, -NAME path, and the lab's tensors endpoint names files
// inside its tensors folder. The With methods return a copy; the receiver
// is unchanged.
type FileExperiment interface {
	Experiment
	FileRoles() []FileRole
	// WithFiles returns the experiment reading files (role → name); an
	// unknown role is an error.
	WithFiles(files map[string]string) (Experiment, error)
	// WithOutDir returns the experiment writing its outputs into dir.
	WithOutDir(dir string) Experiment
	// WithRoot returns the experiment reading files only inside root (a
	// name is relative to it and may not leave it), each tensor at most
	// maxElements elements (0: the experiment's default).
	WithRoot(root string, maxElements int64) FileExperiment
}
