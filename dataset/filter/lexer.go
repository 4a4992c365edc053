package filter

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// tokenKind classifies the tokens of the filter language.
type tokenKind uint8

const (
	tokEOF         tokenKind = iota
	tokIdent                 // bare word: a column, a function or a keyword
	tokQuotedIdent           // "name" or `name`: always a column, never a keyword
	tokString                // 'text'
	tokNumber                // 12, 1.5, 1e3, .5
	tokOp                    // punctuation and operators
)

// token is one lexeme. text holds the unescaped value for identifiers and
// strings, the source text for numbers and operators.
type token struct {
	kind tokenKind
	text string
	pos  int // byte offset of the first character in the source
}

// operators lists the punctuation the lexer knows, longest first so that
// "<=" wins over "<".
var operators = []string{"<>", "!=", "<=", ">=", "||", "=", "<", ">", "+", "-", "*", "/", "%", "(", ")", "[", "]", ",", "."}

// lex splits src into tokens, ending with a tokEOF token at len(src).
func lex(src string) ([]token, *syntaxError) {
	var toks []token
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			i++
		case c == '\'':
			text, end, ok := lexQuoted(src, i, '\'')
			if !ok {
				return nil, &syntaxError{pos: i, msg: "unterminated string"}
			}
			toks = append(toks, token{kind: tokString, text: text, pos: i})
			i = end
		case c == '"' || c == '`':
			text, end, ok := lexQuoted(src, i, c)
			if !ok {
				return nil, &syntaxError{pos: i, msg: "unterminated quoted name"}
			}
			if text == "" {
				return nil, &syntaxError{pos: i, msg: "empty quoted name"}
			}
			toks = append(toks, token{kind: tokQuotedIdent, text: text, pos: i})
			i = end
		case isDigit(c) || (c == '.' && i+1 < len(src) && isDigit(src[i+1])):
			end, ok := lexNumber(src, i)
			if !ok {
				return nil, &syntaxError{pos: i, msg: "malformed number " + quoteSource(src[i:end])}
			}
			toks = append(toks, token{kind: tokNumber, text: src[i:end], pos: i})
			i = end
		default:
			r, size := utf8.DecodeRuneInString(src[i:])
			if r == '_' || unicode.IsLetter(r) {
				end := i + size
				for end < len(src) {
					r, size := utf8.DecodeRuneInString(src[end:])
					if r != '_' && r != '$' && !unicode.IsLetter(r) && !unicode.IsDigit(r) {
						break
					}
					end += size
				}
				toks = append(toks, token{kind: tokIdent, text: src[i:end], pos: i})
				i = end
				continue
			}
			op := ""
			for _, candidate := range operators {
				if strings.HasPrefix(src[i:], candidate) {
					op = candidate
					break
				}
			}
			if op == "" {
				if r == utf8.RuneError && size <= 1 {
					return nil, &syntaxError{pos: i, msg: "invalid UTF-8"}
				}
				return nil, &syntaxError{pos: i, msg: "unexpected " + quoteSource(string(r))}
			}
			toks = append(toks, token{kind: tokOp, text: op, pos: i})
			i += len(op)
		}
	}
	return append(toks, token{kind: tokEOF, pos: len(src)}), nil
}

// lexQuoted reads a quoted run starting at src[start] == quote, where a
// doubled quote stands for one. It returns the unescaped text and the offset
// after the closing quote.
func lexQuoted(src string, start int, quote byte) (string, int, bool) {
	var b strings.Builder
	for i := start + 1; i < len(src); i++ {
		if src[i] != quote {
			b.WriteByte(src[i])
			continue
		}
		if i+1 < len(src) && src[i+1] == quote {
			b.WriteByte(quote)
			i++
			continue
		}
		return b.String(), i + 1, true
	}
	return "", len(src), false
}

// lexNumber returns the end of the number starting at src[start]:
// digits [. digits] [e [+-] digits]. ok is false when an exponent has no
// digits or a letter sticks to the number (12abc).
func lexNumber(src string, start int) (end int, ok bool) {
	i := start
	for i < len(src) && isDigit(src[i]) {
		i++
	}
	if i < len(src) && src[i] == '.' {
		i++
		for i < len(src) && isDigit(src[i]) {
			i++
		}
	}
	if i < len(src) && (src[i] == 'e' || src[i] == 'E') {
		i++
		if i < len(src) && (src[i] == '+' || src[i] == '-') {
			i++
		}
		digits := i
		for i < len(src) && isDigit(src[i]) {
			i++
		}
		if i == digits {
			return i, false
		}
	}
	if i < len(src) {
		if r, _ := utf8.DecodeRuneInString(src[i:]); r == '_' || unicode.IsLetter(r) || r == '.' {
			// Show the whole word that sticks to the number.
			for i < len(src) {
				r, size := utf8.DecodeRuneInString(src[i:])
				if r != '_' && r != '.' && !unicode.IsLetter(r) && !unicode.IsDigit(r) {
					break
				}
				i += size
			}
			return i, false
		}
	}
	return i, true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// quoteSource shows a piece of source text in an error message.
func quoteSource(s string) string {
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return "'" + s + "'"
}
