package codec

import (
	"cmp"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
)

// FSST encoding: training a symbol table on a sample and compressing with it.
//
// Training follows the reference algorithm of the FSST paper (Boncz,
// Neumann, Leis, VLDB 2020), from which Lance's encoder derives:
//
//   - The sample is about 16 KiB of chunks of at most 512 bytes, each taken
//     from a random value.
//   - Each round compresses the sample with the current table, counting how
//     often each symbol, each escaped byte and each pair of adjacent
//     symbols occurs, and the bytes the table saves.
//   - The symbols and concatenated pairs then become candidates whose gain
//     is count × length (×8 for 1-byte symbols, which remove 2-byte
//     escapes), and the 255 best make the next table.
//   - The table that saved the most bytes wins.
//
// Where this differs from the reference, it is for compression measured on
// captions, URLs, log lines and JSON:
//
//   - Every round compresses the whole sample, for 8 rounds. The
//     reference takes 5 rounds over a growing part of the sample (8, 38,
//     68, 98, then 128 parts in 128) to save time; its tables were still
//     improving, and the 8 full rounds give captions 4–8% and URLs and
//     log lines about 4% smaller.
//   - A table is trained under two candidate policies and the one that
//     saves more wins. The reference's, forced by its hash-table matcher,
//     admits one symbol of 3 or more bytes per 3-byte prefix, which keeps
//     long symbols from crowding each other out (captions 7% smaller than
//     without it); text with many symbols sharing a prefix, JSON's `","`
//     say, does 10% better without it.
//   - Candidates from pairs seen once are dropped (the reference drops
//     those seen fewer than 5·frac/128 times), which makes training
//     quicker at no measurable cost.
//
// Compression is greedy: at each position emit the longest symbol that
// matches, else escape the byte. Any table that maps codes to 1..8-byte
// symbols is valid for a decoder, so the quality of training affects only
// the compression ratio.

const (
	fsstSampleTarget = 16 << 10 // sample this many bytes of input, as Lance does
	fsstSampleLine   = 512      // the longest chunk of one value in the sample
	// fsstRounds is the rounds of table building per candidate policy.
	fsstRounds = 8
	// fsstSingleByteBoost favours 1-byte symbols when ranking candidates, as
	// the FSST reference does: they remove escapes (2 bytes) at little cost.
	fsstSingleByteBoost = 8
)

// fsstSymbol is a symbol under construction.
type fsstSymbol struct {
	val uint64 // bytes, first in the low bits, zero above len
	len int    // 1..8
}

func (s fsstSymbol) concat(next fsstSymbol) fsstSymbol {
	length := min(s.len+next.len, fsstMaxSymLen)
	val := s.val | next.val<<(8*s.len)
	return fsstSymbol{val: val & symbolMask(length), len: length}
}

// fsstMatcher finds the longest symbol of a table at a position.
type fsstMatcher struct {
	// long[b] lists the multi-byte symbols starting with byte b, longest
	// first, so the first match is the longest.
	long [256][]fsstEntry
	// single[b] is the code of the 1-byte symbol b, or -1.
	single [256]int16
}

// fsstEntry is a multi-byte symbol ready for matching against a word loaded
// from the input.
type fsstEntry struct {
	val, mask uint64
	len       int
	code      uint8
}

func newFSSTMatcher(symbols []fsstSymbol) *fsstMatcher {
	m := &fsstMatcher{}
	for b := range m.single {
		m.single[b] = -1
	}
	for code, s := range symbols {
		first := byte(s.val)
		if s.len == 1 {
			m.single[first] = int16(code)
			continue
		}
		m.long[first] = append(m.long[first], fsstEntry{val: s.val, mask: symbolMask(s.len), len: s.len, code: uint8(code)})
	}
	for b := range m.long {
		slices.SortStableFunc(m.long[b], func(x, y fsstEntry) int { return cmp.Compare(y.len, x.len) })
	}
	return m
}

// match returns the code and length of the longest symbol at the start of
// s (which must not be empty), or code -1 and length 1 for an escape.
func (m *fsstMatcher) match(s []byte) (code, length int) {
	if entries := m.long[s[0]]; len(entries) > 0 {
		var word uint64
		avail := len(s)
		if avail >= 8 {
			word = binary.LittleEndian.Uint64(s)
			avail = 8
		} else {
			for i := avail - 1; i >= 0; i-- {
				word = word<<8 | uint64(s[i])
			}
		}
		for _, e := range entries {
			if e.len <= avail && word&e.mask == e.val {
				return int(e.code), e.len
			}
		}
	}
	if c := m.single[s[0]]; c >= 0 {
		return int(c), 1
	}
	return -1, 1
}

// appendEncoded compresses src greedily and appends the codes to dst.
func (m *fsstMatcher) appendEncoded(dst, src []byte) []byte {
	for pos := 0; pos < len(src); {
		code, length := m.match(src[pos:])
		if code < 0 {
			dst = append(dst, fsstEscape, src[pos])
		} else {
			dst = append(dst, byte(code))
		}
		pos += length
	}
	return dst
}

// AppendEncoded compresses one value with the table and appends the codes
// to dst. With the table's switch off the value is appended unchanged.
func (t *FSSTTable) AppendEncoded(dst, src []byte) []byte {
	if !t.compressed {
		return append(dst, src...)
	}
	t.matcherOnce.Do(func() {
		symbols := make([]fsstSymbol, t.n)
		for code := range symbols {
			symbols[code] = fsstSymbol{val: t.symbols[code], len: int(t.lens[code])}
		}
		t.matcher = newFSSTMatcher(symbols)
	})
	return t.matcher.appendEncoded(dst, src)
}

// FSSTEncodeAll compresses a run of values the way Lance's FSST encoder does:
// value i is data[offsets[i]:offsets[i+1]]. When the values total less than
// FSSTMinInputSize bytes the table's switch is off and the values are
// returned unchanged (the output then aliases data); otherwise a table is
// trained on a sample and every value is compressed with it. It returns the
// table and the offsets (starting at 0) and bytes of the compressed values.
func FSSTEncodeAll[O Offset](offsets []O, data []byte) (*FSSTTable, []O, []byte, error) {
	if err := checkOffsets("fsst", offsets, len(data)); err != nil {
		return nil, nil, nil, err
	}
	first, last := offsets[0], offsets[len(offsets)-1]
	out := make([]O, len(offsets))
	if last-first < FSSTMinInputSize {
		for i, off := range offsets {
			out[i] = off - first
		}
		return NewPlainFSSTTable(), out, data[first:last], nil
	}
	table := TrainFSST(fsstSample(offsets, data))
	compressed := make([]byte, 0, (last-first)/2)
	for i := 1; i < len(offsets); i++ {
		compressed = table.AppendEncoded(compressed, data[offsets[i-1]:offsets[i]])
		if offsetBytes[O]() == 4 && uint64(len(compressed)) > math.MaxUint32 {
			return nil, nil, nil, invalidf("fsst: %d compressed bytes do not fit 32-bit offsets", len(compressed))
		}
		out[i] = O(len(compressed))
	}
	return table, out, compressed, nil
}

// fsstSample picks chunks of at most fsstSampleLine bytes of values chosen
// at random (with a fixed seed, so output is reproducible) until about
// fsstSampleTarget bytes are collected; inputs no larger than that are
// their own sample.
func fsstSample[O Offset](offsets []O, data []byte) [][]byte {
	n := len(offsets) - 1
	total := uint64(offsets[n] - offsets[0])
	if total <= fsstSampleTarget {
		sample := make([][]byte, n)
		for i := range sample {
			sample[i] = data[offsets[i]:offsets[i+1]]
		}
		return sample
	}
	rng := rand.New(rand.NewPCG(0x4653, 0x5354))
	var sample [][]byte
	size := 0
	for size < fsstSampleTarget {
		i := rng.IntN(n)
		for offsets[i] == offsets[i+1] { // total > 0: some value is not empty
			if i++; i == n {
				i = 0
			}
		}
		value := data[offsets[i]:offsets[i+1]]
		chunks := (len(value) + fsstSampleLine - 1) / fsstSampleLine
		value = value[fsstSampleLine*rng.IntN(chunks):]
		value = value[:min(len(value), fsstSampleLine)]
		sample = append(sample, value)
		size += len(value)
	}
	return sample
}

// TrainFSST builds a symbol table (with the compression switch on) suited to
// strings like those in sample. If the sample offers nothing to compress the
// table has the switch off.
func TrainFSST(sample [][]byte) *FSSTTable {
	var byteCounts [256]int
	for _, s := range sample {
		for _, b := range s {
			byteCounts[b]++
		}
	}
	pairCounts := fsstPairCounts.Get().(*[]uint32)
	defer fsstPairCounts.Put(pairCounts)
	tr := fsstTrainer{
		sample: sample,
		count1: make([]uint32, fsstCodeSpace),
		count2: *pairCounts,
	}
	defer tr.clearPairs() // the pool holds zeroed tables
	// Train one table with each candidate policy and keep the one that
	// saved the most bytes on the sample. The first table holds only 1-
	// and 2-byte symbols, so the policies start from the same one.
	var best []fsstSymbol
	bestGain := tr.count(true)
	first := tr.candidates(false)
	for _, uniquePrefix := range []bool{true, false} {
		tr.symbols = first
		for round := 1; ; round++ {
			// The last round only measures the table built by the one
			// before.
			last := round == fsstRounds
			if gain := tr.count(!last); gain >= bestGain {
				best, bestGain = tr.symbols, gain
			}
			if last {
				break
			}
			tr.symbols = tr.candidates(uniquePrefix)
		}
	}
	if len(best) == 0 {
		return NewPlainFSSTTable()
	}
	return finalizeFSSTTable(best, byteCounts)
}

// fsstCodeSpace numbers what the trainer counts: codes 0..254 are the
// current symbols, 256+b is byte b written as an escape.
const fsstCodeSpace = 512

type fsstTrainer struct {
	sample  [][]byte
	symbols []fsstSymbol
	count1  []uint32 // occurrences per code
	count2  []uint32 // occurrences per adjacent pair, at prev*fsstCodeSpace+next
	pairs   []int    // the indices of count2 that are not zero

	// Scratch of candidates, kept across rounds.
	index     map[fsstSymbol]int32 // candidate symbol → index in cands
	cands     []fsstCandidate
	gainList  []uint64
	top, rest []fsstCandidate
}

func (tr *fsstTrainer) symbolOf(code int) fsstSymbol {
	if code >= 256 {
		return fsstSymbol{val: uint64(code - 256), len: 1}
	}
	return tr.symbols[code]
}

// count compresses the sample with the current symbols, recording symbol
// (and, if pairs is set, pair) frequencies, and returns the bytes saved:
// symbol lengths less one byte per code and one more per escape.
func (tr *fsstTrainer) count(pairs bool) int {
	clear(tr.count1)
	tr.clearPairs()
	m := newFSSTMatcher(tr.symbols)
	gain := 0
	for _, s := range tr.sample {
		prev := -1
		for pos := 0; pos < len(s); {
			code, length := m.match(s[pos:])
			if code < 0 {
				code = 256 + int(s[pos])
				gain--
			} else {
				gain += length - 1
			}
			tr.count1[code]++
			// Also count the first byte on its own when a longer symbol
			// matched, so that candidates can grow one byte at a time.
			byteCode := 256 + int(s[pos])
			if length > 1 {
				tr.count1[byteCode]++
			}
			if pairs && prev >= 0 {
				tr.countPair(prev, code)
				if length > 1 {
					tr.countPair(prev, byteCode)
				}
			}
			prev = code
			pos += length
		}
	}
	return gain
}

// fsstPairCounts recycles the 1 MiB pair-count tables of training, which
// runs once per page.
var fsstPairCounts = sync.Pool{New: func() any {
	counts := make([]uint32, fsstCodeSpace*fsstCodeSpace)
	return &counts
}}

// clearPairs zeroes the pair counts, touching only the entries in use.
func (tr *fsstTrainer) clearPairs() {
	for _, i := range tr.pairs {
		tr.count2[i] = 0
	}
	tr.pairs = tr.pairs[:0]
}

func (tr *fsstTrainer) countPair(prev, next int) {
	i := prev*fsstCodeSpace + next
	if tr.count2[i] == 0 {
		tr.pairs = append(tr.pairs, i)
	}
	tr.count2[i]++
}

// fsstCandidate is a symbol and the bytes it would cover.
type fsstCandidate struct {
	fsstSymbol
	gain uint64
}

// fsstMinPairCount: pairs seen once in the sample are no candidates; they
// would rarely make the table, and dropping them makes training quicker
// (the reference drops up to 5·frac/128 for the same reason).
const fsstMinPairCount = 2

// candidates ranks the counted symbols and concatenated pairs by the bytes
// they would cover, 1-byte symbols boosted, and returns the best
// fsstMaxSymbols of them. With uniquePrefix, symbols of 3 or more bytes
// must differ in their first 3 bytes, as in the FSST reference, whose
// matcher keeps one such symbol per 3-byte prefix.
func (tr *fsstTrainer) candidates(uniquePrefix bool) []fsstSymbol {
	if tr.index == nil {
		tr.index = make(map[fsstSymbol]int32)
	}
	clear(tr.index)
	cands := tr.cands[:0]
	add := func(s fsstSymbol, gain uint64) {
		if i, ok := tr.index[s]; ok {
			cands[i].gain += gain
			return
		}
		tr.index[s] = int32(len(cands))
		cands = append(cands, fsstCandidate{s, gain})
	}
	for code, n := range tr.count1 {
		if n == 0 {
			continue
		}
		s := tr.symbolOf(code)
		gain := uint64(n) * uint64(s.len)
		if s.len == 1 {
			gain *= fsstSingleByteBoost
		}
		add(s, gain)
	}
	for _, i := range tr.pairs {
		if tr.count2[i] < fsstMinPairCount {
			continue
		}
		first := tr.symbolOf(i / fsstCodeSpace)
		if first.len == fsstMaxSymLen {
			continue
		}
		joined := first.concat(tr.symbolOf(i % fsstCodeSpace))
		add(joined, uint64(tr.count2[i])*uint64(joined.len))
	}
	tr.cands = cands
	// Sort only the candidates that can make the table, those at least as
	// good as the k-th best (k leaving room for the prefixes uniquePrefix
	// skips), and the rest only if that room runs out.
	k := fsstMaxSymbols
	if uniquePrefix {
		k *= 2
	}
	cut := uint64(0)
	if len(cands) > k {
		gains := tr.gainList[:0]
		for _, c := range cands {
			gains = append(gains, c.gain)
		}
		slices.Sort(gains)
		cut = gains[len(gains)-k]
		tr.gainList = gains
	}
	top, rest := tr.top[:0], tr.rest[:0]
	for _, c := range cands {
		if c.gain >= cut {
			top = append(top, c)
		} else {
			rest = append(rest, c)
		}
	}
	tr.top, tr.rest = top, rest
	best := make([]fsstSymbol, 0, fsstMaxSymbols)
	var prefixes map[uint64]bool
	if uniquePrefix {
		prefixes = make(map[uint64]bool)
	}
	for _, ranked := range [][]fsstCandidate{top, rest} {
		if len(best) == fsstMaxSymbols {
			break
		}
		// Highest gain first; ties broken by the bytes so training is
		// deterministic.
		slices.SortFunc(ranked, func(a, b fsstCandidate) int {
			if c := cmp.Compare(b.gain, a.gain); c != 0 {
				return c
			}
			if c := cmp.Compare(a.len, b.len); c != 0 {
				return c
			}
			return cmp.Compare(a.val, b.val)
		})
		for _, c := range ranked {
			if len(best) == fsstMaxSymbols {
				break
			}
			if uniquePrefix && c.len >= 3 {
				p := c.val & 0xFFFFFF
				if prefixes[p] {
					continue
				}
				prefixes[p] = true
			}
			best = append(best, c.fsstSymbol)
		}
	}
	return best
}

// finalizeFSSTTable numbers the symbols in the order Lance's encoder leaves
// them: 2-byte symbols that begin a longer symbol (codes below suffix_lim),
// the other 2-byte symbols, then lengths 3 to 8, and 1-byte symbols last. The
// terminator is the rarest byte of the sample. Decoders ignore both; they
// only keep the table recognisably the same shape as Lance's.
func finalizeFSSTTable(symbols []fsstSymbol, byteCounts [256]int) *FSSTTable {
	type ranked struct {
		fsstSymbol
		group int
	}
	order := make([]ranked, len(symbols))
	for i, s := range symbols {
		group := s.len // lengths 3..8 sort between the 2- and 1-byte groups
		switch s.len {
		case 1:
			group = fsstMaxSymLen + 1
		case 2:
			group = 1
			for _, other := range symbols {
				if other.len > 2 && other.val&0xFFFF == s.val {
					group = 0
					break
				}
			}
		}
		order[i] = ranked{s, group}
	}
	slices.SortStableFunc(order, func(a, b ranked) int { return cmp.Compare(a.group, b.group) })

	t := &FSSTTable{compressed: true, n: len(order)}
	for code, s := range order {
		t.symbols[code] = s.val
		t.lens[code] = uint8(s.len)
		if s.group == 0 {
			t.suffixLim++
		}
	}
	rarest := 0
	for b, c := range byteCounts {
		if c < byteCounts[rarest] {
			rarest = b
		}
	}
	t.terminator = uint8(rarest)
	return t
}
