package filter

import (
	"fmt"
	"unicode/utf8"
)

// syntaxError is a lexer or parser failure at a byte offset of the source;
// Parse turns it into an error wrapping lancer.ErrInvalidArgument.
type syntaxError struct {
	pos int
	msg string
}

// maxShownSQL bounds how much of a filter an error message repeats.
const maxShownSQL = 200

// positionError is the one shape of every error that points into a filter:
//
//	filter: "price >> 3": unexpected '>' at column 8: lancer: invalid argument
//
// Columns count characters from 1, so the position matches what a user sees.
// category is one of lancer's error categories; cause, if not nil, is
// wrapped too (an Arrow compute error, say).
func positionError(sql string, pos int, category error, cause error, msg string) error {
	shown := clip(sql, maxShownSQL)
	col := utf8.RuneCountInString(sql[:min(max(pos, 0), len(sql))]) + 1
	if cause != nil {
		return fmt.Errorf("filter: %q: %s at column %d: %w: %w", shown, msg, col, cause, category)
	}
	return fmt.Errorf("filter: %q: %s at column %d: %w", shown, msg, col, category)
}

// clip cuts s to at most n bytes, at a character boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
