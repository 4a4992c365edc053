package ftsindex

import "hash/maphash"

// wordMemo maps words (a tokenizer's output before the filters) to int32
// values: an open-addressing table of 16-byte slots over one arena of the
// words' bytes. It is what a map[string]int32 does for the build's memo,
// in about half the cache lines a lookup touches (a slot and the word's
// bytes, instead of a control word, a slot and a separately allocated
// key), which is most of a build's time on text with a large vocabulary.
// The words are copied in: a caller's buffer may be reused.
type wordMemo struct {
	// maxArena is maxMemoArena, lower in tests.
	maxArena uint64
	seed     maphash.Seed
	slots    []memoSlot // a power of two long
	arena    []byte
	n        int
}

// memoSlot is one entry: hash is the word's hash with the low bit set (0
// marks an empty slot), the word is arena[off:off+size].
type memoSlot struct {
	hash uint32
	off  uint32
	size uint32
	val  int32
}

// maxMemoArena bounds a memo's arena: the offsets are 32-bit. A word that
// would pass it is not kept (Put does nothing): the caller then filters
// it again when it comes again, which changes nothing but the time.
const maxMemoArena = 1<<32 - 1

func newWordMemo() *wordMemo {
	return &wordMemo{maxArena: maxMemoArena, seed: maphash.MakeSeed(), slots: make([]memoSlot, 1024)}
}

// Len returns the number of words in m.
func (m *wordMemo) Len() int { return m.n }

func (m *wordMemo) hash(w string) uint32 {
	return uint32(maphash.String(m.seed, w)) | 1
}

// Get returns w's value and whether w is in m.
func (m *wordMemo) Get(w string) (int32, bool) {
	h := m.hash(w)
	mask := uint32(len(m.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := &m.slots[i]
		if s.hash == 0 {
			return 0, false
		}
		if s.hash == h && int(s.size) == len(w) && string(m.arena[s.off:s.off+s.size]) == w {
			return s.val, true
		}
	}
}

// Put adds w, not in m, with value v, unless the arena cannot take it.
func (m *wordMemo) Put(w string, v int32) {
	if uint64(len(m.arena))+uint64(len(w)) > m.maxArena {
		return
	}
	if (m.n+1)*4 > len(m.slots)*3 {
		m.grow()
	}
	off := uint32(len(m.arena))
	m.arena = append(m.arena, w...)
	m.insert(memoSlot{hash: m.hash(w), off: off, size: uint32(len(w)), val: v})
	m.n++
}

func (m *wordMemo) insert(s memoSlot) {
	mask := uint32(len(m.slots) - 1)
	i := s.hash & mask
	for m.slots[i].hash != 0 {
		i = (i + 1) & mask
	}
	m.slots[i] = s
}

func (m *wordMemo) grow() {
	old := m.slots
	m.slots = make([]memoSlot, 2*len(old))
	for _, s := range old {
		if s.hash != 0 {
			m.insert(s)
		}
	}
}
