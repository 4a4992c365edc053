package ftsindex

import "strings"

// stemEnglish is the Snowball English (Porter2) stemmer in the version
// Lance 12's rust-stemmers runs, which differs from the classic algorithm
// in a few places found by comparing with real Lance (the interop test
// TestTokenizersMatchLance stems those words with both): more R1
// exceptions (past-, univers-, later-, emerg-, organ-, inter- besides
// gener-, commun-, arsen-), -ogist → -og in step 2, no undoubling of
// three-letter stems starting with a vowel (add, ebb, err, off), and
// "evening" and "pasted" (→ "paste") kept as Lance stems them. Like
// Snowball it works on code points and leaves words of fewer than three
// alone; letters other than a-z, upper case included, are consonants.
func stemEnglish(word string) string {
	w := []rune(word)
	if len(w) < 3 {
		return word
	}
	if len(w) > 0 && w[0] == '\'' {
		w = w[1:]
	}
	if s, ok := stemExceptions[string(w)]; ok {
		return s
	}
	// y at the start or after a vowel is a consonant: Y
	yFound := false
	for i := range w {
		if w[i] == 'y' && (i == 0 || isVowel(w[i-1])) {
			w[i] = 'Y'
			yFound = true
		}
	}
	st := &stemmer{w: w, yFound: yFound}
	st.regions()
	st.step0()
	st.step1a()
	switch string(st.w) {
	case "inning", "outing", "canning", "herring", "earring", "proceed", "exceed", "succeed":
		return st.result()
	}
	st.step1b()
	st.step1c()
	st.step2()
	st.step3()
	st.step4()
	st.step5()
	return st.result()
}

var stemExceptions = map[string]string{
	"skis": "ski", "skies": "sky", "dying": "die", "lying": "lie", "tying": "tie",
	"idly": "idl", "gently": "gentl", "ugly": "ugli", "early": "earli", "only": "onli", "singly": "singl",
	"sky": "sky", "news": "news", "howe": "howe", "atlas": "atlas", "cosmos": "cosmos", "bias": "bias",
	"andes": "andes", "evening": "evening", "evenings": "evening", "pasted": "paste",
}

var r1Prefixes = []string{"gener", "commun", "arsen", "past", "univers", "later", "emerg", "organ", "inter"}

type stemmer struct {
	w      []rune
	r1, r2 int
	// yFound: the prelude turned a y into Y. Snowball's postlude turns Y
	// back into y only then, so an upper-case Y in the input stays unless
	// the word also had a consonant y ("Yelling" → "Yell", "Yoyo" → "yoyo").
	yFound bool
}

func isVowel(r rune) bool {
	switch r {
	case 'a', 'e', 'i', 'o', 'u', 'y':
		return true
	}
	return false
}

func (s *stemmer) result() string {
	if !s.yFound {
		return string(s.w)
	}
	for i, r := range s.w {
		if r == 'Y' {
			s.w[i] = 'y'
		}
	}
	return string(s.w)
}

// regions sets R1 and R2: each the region after the first non-vowel
// following a vowel (R1 after an exception prefix instead).
func (s *stemmer) regions() {
	after := func(from int) int {
		for i := from + 1; i < len(s.w); i++ {
			if !isVowel(s.w[i]) && isVowel(s.w[i-1]) {
				return i + 1
			}
		}
		return len(s.w)
	}
	s.r1 = -1
	str := string(s.w)
	for _, p := range r1Prefixes {
		if strings.HasPrefix(str, p) {
			s.r1 = len([]rune(p))
			break
		}
	}
	if s.r1 < 0 {
		s.r1 = after(0)
		if len(s.w) > 0 && s.r1 > len(s.w) {
			s.r1 = len(s.w)
		}
	}
	s.r2 = len(s.w)
	if s.r1 < len(s.w) {
		s.r2 = after(s.r1)
	}
}

func (s *stemmer) hasSuffix(suf string) bool {
	n := len(suf)
	if n > len(s.w) {
		return false
	}
	for i := 0; i < n; i++ {
		if s.w[len(s.w)-n+i] != rune(suf[i]) {
			return false
		}
	}
	return true
}

// longest returns the longest of sufs that ends the word, "" if none.
func (s *stemmer) longest(sufs ...string) string {
	best := ""
	for _, suf := range sufs {
		if len(suf) > len(best) && s.hasSuffix(suf) {
			best = suf
		}
	}
	return best
}

func (s *stemmer) inR1(suf string) bool { return len(s.w)-len(suf) >= s.r1 }
func (s *stemmer) inR2(suf string) bool { return len(s.w)-len(suf) >= s.r2 }

func (s *stemmer) replace(suf, with string) {
	s.w = append(s.w[:len(s.w)-len(suf)], []rune(with)...)
}

func (s *stemmer) step0() {
	if suf := s.longest("'", "'s", "'s'"); suf != "" {
		s.replace(suf, "")
	}
}

func (s *stemmer) step1a() {
	switch suf := s.longest("sses", "ied", "ies", "s", "us", "ss"); suf {
	case "sses":
		s.replace(suf, "ss")
	case "ied", "ies":
		if len(s.w) > 4 {
			s.replace(suf, "i")
		} else {
			s.replace(suf, "ie")
		}
	case "s":
		// delete when the part before the letter before the s has a vowel
		for i := 0; i < len(s.w)-2; i++ {
			if isVowel(s.w[i]) {
				s.replace("s", "")
				break
			}
		}
	}
}

func (s *stemmer) hasVowelBefore(suf string) bool {
	for i := 0; i < len(s.w)-len(suf); i++ {
		if isVowel(s.w[i]) {
			return true
		}
	}
	return false
}

func isDouble(a, b rune) bool {
	if a != b {
		return false
	}
	switch a {
	case 'b', 'd', 'f', 'g', 'm', 'n', 'p', 'r', 't':
		return true
	}
	return false
}

// endsShortSyllable: a non-vowel, a vowel and a non-vowel other than w, x
// and Y end w, or w is a vowel and a non-vowel.
func endsShortSyllable(w []rune) bool {
	n := len(w)
	if n == 2 {
		return isVowel(w[0]) && !isVowel(w[1])
	}
	if n >= 3 {
		c := w[n-1]
		return !isVowel(w[n-3]) && isVowel(w[n-2]) && !isVowel(c) && c != 'w' && c != 'x' && c != 'Y'
	}
	return false
}

func (s *stemmer) step1b() {
	suf := s.longest("eed", "eedly", "ed", "edly", "ing", "ingly")
	switch suf {
	case "":
		return
	case "eed", "eedly":
		if s.inR1(suf) {
			s.replace(suf, "ee")
		}
		return
	}
	if !s.hasVowelBefore(suf) {
		return
	}
	s.replace(suf, "")
	n := len(s.w)
	switch {
	case s.hasSuffix("at") || s.hasSuffix("bl") || s.hasSuffix("iz"):
		s.w = append(s.w, 'e')
	case n >= 2 && isDouble(s.w[n-2], s.w[n-1]):
		if !(n == 3 && isVowel(s.w[0])) {
			s.w = s.w[:n-1]
		}
	case s.r1 >= n && endsShortSyllable(s.w):
		s.w = append(s.w, 'e')
	}
}

func (s *stemmer) step1c() {
	n := len(s.w)
	if n > 2 && (s.w[n-1] == 'y' || s.w[n-1] == 'Y') && !isVowel(s.w[n-2]) {
		s.w[n-1] = 'i'
	}
}

var step2Rules = map[string]string{
	"tional": "tion", "enci": "ence", "anci": "ance", "abli": "able", "entli": "ent", "izer": "ize",
	"ization": "ize", "ational": "ate", "ation": "ate", "ator": "ate", "alism": "al", "aliti": "al",
	"alli": "al", "fulness": "ful", "ousli": "ous", "ousness": "ous", "iveness": "ive", "iviti": "ive",
	"biliti": "ble", "bli": "ble", "fulli": "ful", "lessli": "less", "ogist": "og",
	"ogi": "", "li": "", // conditional, below
}

var step2Suffixes = func() []string {
	var out []string
	for k := range step2Rules {
		out = append(out, k)
	}
	return out
}()

func (s *stemmer) step2() {
	suf := s.longest(step2Suffixes...)
	if suf == "" || !s.inR1(suf) {
		return
	}
	n := len(s.w) - len(suf)
	switch suf {
	case "ogi":
		if n > 0 && s.w[n-1] == 'l' {
			s.replace(suf, "og")
		}
	case "li":
		if n > 0 && strings.ContainsRune("cdeghkmnrt", s.w[n-1]) {
			s.replace(suf, "")
		}
	default:
		s.replace(suf, step2Rules[suf])
	}
}

func (s *stemmer) step3() {
	suf := s.longest("tional", "ational", "alize", "icate", "iciti", "ical", "ful", "ness", "ative")
	if suf == "" || !s.inR1(suf) {
		return
	}
	switch suf {
	case "tional":
		s.replace(suf, "tion")
	case "ational":
		s.replace(suf, "ate")
	case "alize":
		s.replace(suf, "al")
	case "icate", "iciti", "ical":
		s.replace(suf, "ic")
	case "ful", "ness":
		s.replace(suf, "")
	case "ative":
		if s.inR2(suf) {
			s.replace(suf, "")
		}
	}
}

func (s *stemmer) step4() {
	suf := s.longest("al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent",
		"ism", "ate", "iti", "ous", "ive", "ize", "ion")
	if suf == "" || !s.inR2(suf) {
		return
	}
	if suf == "ion" {
		n := len(s.w) - 3
		if n > 0 && (s.w[n-1] == 's' || s.w[n-1] == 't') {
			s.replace(suf, "")
		}
		return
	}
	s.replace(suf, "")
}

func (s *stemmer) step5() {
	n := len(s.w)
	switch {
	case s.hasSuffix("e"):
		if s.inR2("e") || (s.inR1("e") && !endsShortSyllable(s.w[:n-1])) {
			s.w = s.w[:n-1]
		}
	case s.hasSuffix("l"):
		if s.inR2("l") && n >= 2 && s.w[n-2] == 'l' {
			s.w = s.w[:n-1]
		}
	}
}
