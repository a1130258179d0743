package sim

import "context"

// filesKey is the context key of the folder a runner lets runs write into.
type filesKey struct{}

// WithFilesDir returns ctx carrying the folder where a run executed with it
// may write files: [Run.FilesDir] returns it. An empty dir means the runner
// lets runs write no files at all (the lab without a data folder).
func WithFilesDir(ctx context.Context, dir string) context.Context {
	return context.WithValue(ctx, filesKey{}, dir)
}

// FilesDir returns the folder where the run may write files and whether the
// runner chose one ([WithFilesDir]). When set is false (`lab run` in a
// terminal) an experiment writes where its user asked, as before; when set
// is true it must write only under dir, and dir == "" means it must write
// nothing: an experiment asked to write files then fails with an error
// saying so. The lab sets a folder inside its data folder, so that no run it
// executes writes into the lab's working directory.
func (r *Run) FilesDir() (dir string, set bool) {
	dir, set = r.ctx.Value(filesKey{}).(string)
	return dir, set
}
