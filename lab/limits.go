package lab

import (
	"encoding/json"
	"fmt"
	"slices"
)

// Limits on what one run may hold, in bytes as well as in counts, so that a
// run's record (written at every flush, listed by GET /api/runs) and its
// live log stay small whatever a client sends. Each is named in the error
// of a request that would pass it; such a request is refused whole (400),
// nothing of it is kept.
const (
	// maxSeries is the most series (distinct names) of a run.
	maxSeries = 256
	// maxExtraName is the longest name of an extra value of a point.
	maxExtraName = 64
	// maxExtraNames is the most distinct extra-value names of a run (the
	// columns of its CSV export).
	maxExtraNames = 256
	// maxSummaryKeys and maxSummaryKey bound a run's summary.
	maxSummaryKeys = 256
	maxSummaryKey  = 200
	// maxNotesBytes is the most text a run's notes hold in all; further
	// notes are dropped, and the last one kept says so.
	maxNotesBytes = 64 << 10
	// maxParamsBytes is the largest parameter object of a run, as JSON.
	maxParamsBytes = 16 << 10
	// maxJSONDepth is the deepest nesting of a client's parameter values.
	maxJSONDepth = 8
	// maxClientRuns is the most client runs live at once.
	maxClientRuns = 64
	// maxLiveBytes is the most bytes of points, as the API's JSON, that a
	// live run keeps in memory once they are in the notebook (viewers
	// further behind read the notebook).
	maxLiveBytes = 16 << 20
	// maxListBytes is the most bytes of records one GET /api/runs answers.
	maxListBytes = 32 << 20
)

// jsonDepth returns the deepest nesting of arrays and objects in the JSON
// text b (0 for a scalar), reading strings correctly; b is assumed to be
// valid JSON (the caller decodes it too).
func jsonDepth(b []byte) int {
	depth, deepest, inString, escaped := 0, 0, false, false
	for _, c := range b {
		switch {
		case inString && escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case inString && c == '"':
			inString = false
		case inString:
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			depth++
			deepest = max(deepest, depth)
		case c == ']' || c == '}':
			depth--
		}
	}
	return deepest
}

// checkParams checks the size and depth of a run's parameters as the
// notebook will keep them.
func checkParams(params map[string]any) error {
	b, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("params: %v", err)
	}
	if len(b) > maxParamsBytes {
		return fmt.Errorf("params: %d bytes as JSON; a run's parameters hold at most %d", len(b), maxParamsBytes)
	}
	if d := jsonDepth(b); d > maxJSONDepth+1 {
		return fmt.Errorf("params: nested %d deep; at most %d", d-1, maxJSONDepth)
	}
	return nil
}

// checkLimitsLocked checks that the run can take the request's points
// (new series and new extra-value names) within maxSeries and
// maxExtraNames; l.mu is held.
func (l *live) checkLimitsLocked(req *eventsRequest) error {
	var newSeries, newExtras map[string]bool
	for _, p := range req.Points {
		if !slices.Contains(l.meta.Series, p.Series) && !newSeries[p.Series] {
			if newSeries == nil {
				newSeries = map[string]bool{}
			}
			newSeries[p.Series] = true
			if len(l.meta.Series)+len(newSeries) > maxSeries {
				return fmt.Errorf("points: more than %d series in one run", maxSeries)
			}
		}
		for k := range p.Extra {
			if !l.extraNames[k] && !newExtras[k] {
				if newExtras == nil {
					newExtras = map[string]bool{}
				}
				newExtras[k] = true
				if len(l.extraNames)+len(newExtras) > maxExtraNames {
					return fmt.Errorf("points: more than %d names of extra values in one run", maxExtraNames)
				}
			}
		}
	}
	return nil
}
