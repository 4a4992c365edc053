package server

import (
	"net/http"
	"path/filepath"
	"time"
)

// SetAfterCommit makes every write run f after its commit and before its
// answer is written; an error from f fails the request.
func SetAfterCommit(s *Server, f func(r *http.Request) error) { s.afterCommit = f }

// SetClock replaces the clock of the multipart staging area and of the
// unacknowledged-commit cache.
func SetClock(s *Server, now func() time.Time) {
	s.uploads.now = now
	s.unacked.now = now
}

// StagingDir is the folder where s stages multipart parts (on local disk).
func StagingDir(s *Server) string {
	return filepath.Join(s.uploads.localDir, filepath.FromSlash(s.uploads.prefix))
}

// StagingPrefix is the key prefix, in the data location, of the parts s
// stages.
func StagingPrefix(s *Server) string { return s.uploads.prefix + "/" }

// MaxUploadsPerClient is how many multipart uploads one client may hold
// open.
const MaxUploadsPerClient = maxUploadsPerClient
