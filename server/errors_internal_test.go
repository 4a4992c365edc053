package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/dataset"
)

func TestServerClassify(t *testing.T) {
	for _, tc := range []struct {
		err    error
		status int
		code   string
		public bool
	}{
		{fmt.Errorf("x: %w", lancer.ErrInvalidArgument), 400, codeInvalidInput, true},
		{fmt.Errorf("x: %w", lancer.ErrUnsupported), 400, codeUnsupported, true},
		{fmt.Errorf("x: %w", lancer.ErrAlreadyExists), 400, codeAlreadyExists, true},
		{fmt.Errorf("x: %w", lancer.ErrNotFound), 404, codeNotFound, true},
		{inTable(fmt.Errorf("no column: %w", lancer.ErrNotFound)), 400, codeInvalidInput, true},
		{inTable(tableNotFound("t")), 404, codeTableNotFound, true},
		{&dataset.ConflictError{Operation: "Delete", Reason: "raced"}, 409, codeConflict, true},
		{fmt.Errorf("x: %w", context.DeadlineExceeded), 504, codeTimeout, true},
		{&http.MaxBytesError{Limit: 1}, 413, codeTooLarge, true},
		{fmt.Errorf("x: %w", lancer.ErrCorrupt), 500, codeInternal, false},
		{errors.New("disk on fire"), 500, codeInternal, false},
	} {
		status, code, public := classify(tc.err)
		if status != tc.status || code != tc.code || public != tc.public {
			t.Errorf("%v: %d %s %v, want %d %s %v", tc.err, status, code, public, tc.status, tc.code, tc.public)
		}
	}
}
