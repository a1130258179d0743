package sim

import (
	"fmt"
	"maps"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"unicode/utf8"
)

// BuildInfo names the program that computes a run, so that the lab's
// notebook can say which fp8lab produced which numbers.
type BuildInfo struct {
	Version   string `json:"version"`            // fp8lab module version; "(devel)" for a build from source
	Revision  string `json:"revision,omitempty"` // VCS revision, with "+dirty" when the tree was modified
	GoVersion string `json:"go_version"`         // runtime.Version()
	Platform  string `json:"platform"`           // GOOS/GOARCH
	// Program is the main package of the running program and its module,
	// e.g. "github.com/fp8lab/fp8lab/cmd/lab" or, for a user's own program
	// built on fp8lab, "example.com/mylab/cmd/run (example.com/mylab
	// (devel) 1a2b3c4d5e6f)"; then Version is the fp8lab module it uses
	// and Revision is empty (the program's revision is in Program).
	Program string `json:"program,omitempty"`
	// Bindings names the native libraries' bindings the numbers can depend
	// on, with their versions (the WebGPU binding, which bundles
	// wgpu-native), from the build's module list.
	Bindings string `json:"bindings,omitempty"`
	// Device is the machine that computes: the CPU's model and the logical
	// CPUs the program may use (GPU experiments name their adapter in the
	// run's notes). Empty where the program cannot see it (WebAssembly: the
	// page reports the browser's).
	Device string `json:"device,omitempty"`
}

// bindingModules are the modules whose versions Build reports as
// Bindings.
var bindingModules = []string{"github.com/cogentcore/webgpu"}

// fp8labModulePath is the path of the fp8lab module.
const fp8labModulePath = "github.com/fp8lab/fp8lab"

// Set with -ldflags "-X github.com/fp8lab/fp8lab/sim.buildVersion=v0.1.0
// -X github.com/fp8lab/fp8lab/sim.buildRevision=$(git rev-parse HEAD)";
// they win over what runtime/debug.ReadBuildInfo reports (which has no
// revision under -buildvcs=false or in a GOOS=js build).
var buildVersion, buildRevision string

// Build returns the build of this program: the -ldflags values when set,
// else the module version and the vcs.revision/vcs.modified settings that
// the go command records.
func Build() BuildInfo {
	b := BuildInfo{Version: "(devel)", GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if info, ok := debug.ReadBuildInfo(); ok {
		if v := info.Main.Version; v != "" {
			b.Version = v
		}
		dirty := false
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				b.Revision = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if dirty && b.Revision != "" {
			b.Revision += "+dirty"
		}
		b.Program = info.Path
		var binds []string
		for _, d := range info.Deps {
			if slices.Contains(bindingModules, d.Path) {
				binds = append(binds, d.Path+" "+d.Version)
			}
		}
		b.Bindings = strings.Join(binds, ", ")
		if info.Main.Path != "" && info.Main.Path != fp8labModulePath {
			// Another program built on fp8lab: its own module and
			// revision say which program it is; fp8lab is a dependency.
			b.Program = strings.TrimSpace(fmt.Sprintf("%s (%s %s %s)", info.Path, info.Main.Path, info.Main.Version, short(b.Revision)))
			b.Version, b.Revision = "(unknown)", ""
			for _, d := range info.Deps {
				if d.Path == fp8labModulePath {
					b.Version = d.Version
					if d.Replace != nil {
						b.Version += " => " + d.Replace.Path
					}
				}
			}
		}
	}
	b.Device = hostDevice()
	if buildVersion != "" {
		b.Version = buildVersion
	}
	if buildRevision != "" {
		b.Revision = buildRevision
	}
	return b
}

// AppendPointsJSON appends points as a JSON array of
// {"series":S,"x":X,"y":Y,"extra":{...}} objects ("extra" only when there
// are extras, sorted by name), numbers shortest round-trip, NaN and ±Inf as
// null. It is the point format of the lab's API.
func AppendPointsJSON(b []byte, points []Point) []byte {
	b = append(b, '[')
	for i, p := range points {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"series":`...)
		b = appendJSONString(b, p.Series)
		b = append(b, `,"x":`...)
		b = appendJSONFloat(b, p.X)
		b = append(b, `,"y":`...)
		b = appendJSONFloat(b, p.Y)
		if len(p.Extra) > 0 {
			b = append(b, `,"extra":`...)
			b = appendFloatsJSON(b, p.Extra)
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

func appendFloatsJSON(b []byte, m map[string]float64) []byte {
	b = append(b, '{')
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, k)
		b = append(b, ':')
		b = appendJSONFloat(b, m[k])
	}
	return append(b, '}')
}

// short returns the first 12 characters of a revision.
func short(rev string) string {
	if len(rev) > 12 && !strings.HasSuffix(rev, "+dirty") {
		return rev[:12]
	}
	return rev
}

// clientPlatform is the platform a client reports to the lab: GOOS/GOARCH
// and the program, so that the run's record says which program produced
// it (at most 200 bytes, the lab's limit).
func clientPlatform(b BuildInfo) string {
	p := b.Platform
	if b.Program != "" {
		p += " · program " + b.Program
	}
	if len(p) > 200 {
		n := 197
		for n > 0 && !utf8.RuneStart(p[n]) {
			n--
		}
		p = p[:n] + "..."
	}
	return p
}
