package lab

import (
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
	"time"
)

// pageCSP keeps the page and its worker to the lab's own origin: scripts,
// the WebAssembly module, the WebSocket and fetches all come from 'self'.
const pageCSP = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; worker-src 'self'; connect-src 'self'; " +
	"img-src 'self' data: blob:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

// ServeHTTP serves the API, the streams and the page, after the checks of
// the package documentation (Host, Origin, body size and type); a panic in
// a handler answers 500 and is logged.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.log.Error("handler panicked", "method", r.Method, "path", r.URL.Path, "panic", v, "stack", string(debug.Stack()))
			writeError(w, http.StatusInternalServerError, errorf("internal error (logged by the lab)"))
		}
	}()
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	if !s.hostAllowed(r.Host) {
		writeError(w, http.StatusForbidden, errorf("host %q not allowed: the lab answers to %s", r.Host, strings.Join(s.hosts, ", ")))
		return
	}
	isAPI := strings.HasPrefix(r.URL.Path, "/api/")
	if !isAPI {
		h.Set("Content-Security-Policy", pageCSP)
		h.Set("X-Frame-Options", "DENY")
	} else {
		// Every API request, GET included, must come from the lab's own
		// page or from outside a browser: another site's page could
		// otherwise make the browser fetch reports and exports (an <img>
		// needs no CORS) and cost the lab memory and time.
		if !sameOrigin(r) || !sameSite(r) {
			writeError(w, http.StatusForbidden, errorf("cross-origin request refused (Origin %q, Sec-Fetch-Site %q): the API answers the lab's own page and programs outside a browser",
				r.Header.Get("Origin"), r.Header.Get("Sec-Fetch-Site")))
			return
		}
		h.Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
		h.Set("X-Frame-Options", "DENY")
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		if r.Header.Get("Upgrade") != "" && !sameOrigin(r) {
			writeError(w, http.StatusForbidden, errorf("cross-origin WebSocket refused (Origin %q)", r.Header.Get("Origin")))
			return
		}
	default:
		if !sameOrigin(r) {
			writeError(w, http.StatusForbidden, errorf("cross-origin request refused (Origin %q)", r.Header.Get("Origin")))
			return
		}
		if r.ContentLength != 0 {
			ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
			if ct != "application/json" {
				writeError(w, http.StatusUnsupportedMediaType, errorf("Content-Type %q: the API takes application/json", r.Header.Get("Content-Type")))
				return
			}
		}
		limit := int64(maxBody)
		if strings.HasSuffix(r.URL.Path, "/events") {
			limit = maxEventBody
		}
		if r.ContentLength > limit {
			writeError(w, http.StatusRequestEntityTooLarge, errorf("request body of %d bytes; the limit is %d", r.ContentLength, limit))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, limit)
		if r.ContentLength != 0 {
			// A body must arrive within BodyTimeout: a stalled upload does
			// not hold its connection (and goroutine) for ever.
			http.NewResponseController(w).SetReadDeadline(time.Now().Add(s.opts.BodyTimeout))
		}
	}
	s.mux.ServeHTTP(w, r)
}

// sameOrigin reports whether the request has no Origin header (not a
// browser, or a same-origin GET) or one whose host is the request's Host.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	if err != nil || u.Host == "" {
		return false
	}
	return strings.EqualFold(u.Host, r.Host)
}

// sameSite reports whether a browser says the request comes from the lab's
// own origin ("same-origin") or from the user ("none": typed, bookmarked),
// or says nothing (not a browser, or an old one; Origin is checked too).
func sameSite(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
		return true
	}
	return false
}

// String describes the server for logs.
func (s *Server) String() string {
	return fmt.Sprintf("lab(workers=%d, queue<=%d)", s.opts.Workers, s.opts.MaxQueue)
}
