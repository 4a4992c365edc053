package server

// The dataset browser: a single-page app (server/ui/: index.html, app.js,
// style.css, embedded, no build step, nothing fetched from the network)
// served at /ui/, and the read-only JSON API it uses under /ui/api/.
//
//	GET /                                   redirects to /ui/
//	GET /ui/, /ui/app.js, /ui/style.css     the page (no key needed)
//	GET /ui/api/tables                      {"tables":[{name,version,rows,columns}|{name,error}]}
//	GET /ui/api/tables/{t}?ref              summary: ref, version, rows, columns (name,
//	                                        type, kind: image|blob|binary|vector|text|
//	                                        number|bool|time|other, dim), versions,
//	                                        tags, branches, indices
//	GET /ui/api/tables/{t}/rows?ref&offset&limit&filter
//	                                        a page of rows: {"columns","rows":[{_rowid,values}],
//	                                        "total","offset","limit","more"}; images become
//	                                        {"$image":url}, other bytes {"$binary":size,...},
//	                                        long text, lists and vectors are shortened
//	GET /ui/api/tables/{t}/row?ref&row      one row (row = its _rowid), every value in full
//	GET /ui/api/tables/{t}/cell?ref&column&row
//	                                        the bytes of a binary or blob value, typed by
//	                                        http.DetectContentType
//	GET /ui/api/tables/{t}/search?ref&column&row&k&filter
//	                                        the k rows nearest to row's own vector in
//	                                        column, each with _distance
//	GET /ui/api/tables/{t}/graph            the version graph (branch.Log): lines and
//	                                        commits with parents, tags and merge sources
//	GET /ui/api/tables/{t}/diff?from&to&limit
//	                                        branch.Diff's counts and the first rows of
//	                                        each kind of change (updates with "before")
//
// A ref is what lancer's command line takes (branch.ResolveRef): "main",
// a branch, a tag ("tag:T" or a bare name), or "line@version". Responses
// name the state read as "line@version", and the URLs they carry use it,
// so an image URL names an immutable value and may be cached.
//
// Auth: the page itself is public (it holds no data); every /ui/api/
// request needs the server's API key like the rest of the server, in
// x-api-key, or, because an <img> cannot send headers, in the
// lancer_ui_key cookie, which the server accepts on the routes of /ui/api/
// only (as the mux matches them, whatever the spelling of the path). The
// page asks for the key when the API answers 401 and keeps it in the
// browser's localStorage and in that cookie (path /ui/api/, SameSite
// Strict). The API only reads, so the cookie cannot be used to change a
// table from another site, and SameSite keeps other sites from reading
// through it.
//
// Errors are the server's usual JSON {"error","code"}: a bad table name,
// ref syntax, column, row id, number or filter is a 400, a missing table,
// ref, version or row a 404.

import (
	"crypto/subtle"
	"embed"
	"io/fs"
	"net/http"
	"net/url"
)

//go:embed ui/index.html ui/app.js ui/style.css
var uiFiles embed.FS

// uiKeyCookie is the cookie the page sets for <img> requests.
const uiKeyCookie = "lancer_ui_key"

// uiContentSecurityPolicy keeps the page to its own files: it runs no
// inline script and loads nothing from elsewhere, so a value of a table
// rendered by mistake as markup could not run script or leak data.
const uiContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// uiRoutes registers the page and its API.
func (s *Server) uiRoutes() {
	sub, err := fs.Sub(uiFiles, "ui")
	if err != nil {
		panic(err) // the embedded folder is fixed at build time
	}
	static := http.StripPrefix("/ui", http.FileServerFS(sub))
	s.register("GET /{$}", route{access: public}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/ui/", http.StatusFound)
	}))
	// Registered without a method so that it does not clash with
	// "/ui/api/" below (a pattern with a method and one with a longer
	// path would overlap with neither more specific). Public for GET and
	// HEAD only (admit).
	s.register("/ui/", route{access: public}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("allow", "GET, HEAD")
			s.writeError(w, r, &apiError{status: http.StatusMethodNotAllowed, code: codeInvalidInput,
				msg: "the browser UI only answers GET"})
			return
		}
		h := w.Header()
		h.Set("content-security-policy", uiContentSecurityPolicy)
		h.Set("x-content-type-options", "nosniff")
		h.Set("referrer-policy", "no-referrer")
		// The files change with the binary; make the browser revalidate.
		h.Set("cache-control", "no-cache")
		static.ServeHTTP(w, r)
	}))
	api := func(op string, h handlerFunc) {
		s.handle("GET /ui/api/"+op, route{access: uiData}, h)
	}
	api("tables", s.uiTables)
	api("tables/{id}", s.uiSummary)
	api("tables/{id}/rows", s.uiRows)
	api("tables/{id}/row", s.uiRow)
	api("tables/{id}/cell", s.uiCell)
	api("tables/{id}/search", s.uiSearch)
	api("tables/{id}/graph", s.uiGraph)
	api("tables/{id}/diff", s.uiDiff)
	s.register("/ui/api/", route{access: uiData}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, &apiError{status: http.StatusNotFound, code: codeNotFound,
			msg: "no such endpoint: " + r.Method + " " + r.URL.Path})
	}))
}

// uiCookieAuthorized reports whether a request carries the API key in the
// lancer_ui_key cookie, which the page sets for <img> (an <img> sends no
// headers). admit accepts the cookie only on the routes of the UI's API
// (uiData), as the mux matches them: a path such as /ui/api/../../v1/table/
// names the route it cleans to, and /ui/api/%2e%2e/... stays under
// /ui/api/.
func (s *Server) uiCookieAuthorized(r *http.Request) bool {
	c, err := r.Cookie(uiKeyCookie)
	if err != nil {
		return false
	}
	key, err := url.QueryUnescape(c.Value)
	if err != nil {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(key), []byte(s.apiKey)) == 1
}
