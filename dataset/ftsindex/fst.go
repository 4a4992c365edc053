package ftsindex

import (
	"encoding/binary"
	"fmt"
)

// commonInputs is the fst crate's table of frequent input bytes: a
// one-transition node whose input is entry i-1 stores i in the low six bits
// of its state byte instead of storing the byte (I4).
const commonInputs = "te/oasripcnw.hlm-du012g=:bf3y5&_4v9678k%?xCDASFIBEjPTzRNM+LOqHG"

const (
	fstHeader      = 16 // version u64, type u64
	fstFooterV3    = 20 // len u64, root u64, checksum u32
	transIndexSize = 256
	transIndexMin  = 32 // nodes with more transitions carry a 256-byte index
	maxTokenBytes  = 1 << 12
)

// decodeFST enumerates the keys of an fst crate Map (format version 2 or
// 3) into token → id. It reads every node through bounds-checked offsets,
// and fails (never panics) on any address outside the blob, a cycle (more
// steps than the blob has bytes), more than maxKeys keys or a key longer
// than maxTokenBytes.
func decodeFST(b []byte, maxKeys int) (map[string]uint32, error) {
	if len(b) < fstHeader+16 {
		return nil, fmt.Errorf("FST of %d bytes", len(b))
	}
	version := binary.LittleEndian.Uint64(b)
	if version < 2 || version > 3 {
		return nil, fmt.Errorf("FST version %d", version)
	}
	end := len(b)
	if version >= 3 {
		end -= 4 // checksum
	}
	if end < fstHeader+16 {
		return nil, fmt.Errorf("FST of %d bytes", len(b))
	}
	nkeys := binary.LittleEndian.Uint64(b[end-16:])
	root := binary.LittleEndian.Uint64(b[end-8:])
	if nkeys > uint64(maxKeys) {
		return nil, fmt.Errorf("FST of %d keys, at most %d expected", nkeys, maxKeys)
	}
	if root >= uint64(end-16) {
		return nil, fmt.Errorf("FST root %d outside its %d bytes", root, end-16)
	}
	d := &fstDec{data: b[:end-16], out: make(map[string]uint32, nkeys), max: int(nkeys)}
	d.budget = 64*len(b) + 1024
	if err := d.walk(int(root), nil, 0); err != nil {
		return nil, err
	}
	if len(d.out) != int(nkeys) {
		return nil, fmt.Errorf("FST holds %d keys, its footer says %d", len(d.out), nkeys)
	}
	return d.out, nil
}

type fstDec struct {
	data   []byte
	out    map[string]uint32
	max    int
	budget int
}

type fstTrans struct {
	inp  byte
	out  uint64
	addr int
}

type fstNode struct {
	final    bool
	finalOut uint64
	trans    []fstTrans
}

func (d *fstDec) at(i int) (byte, error) {
	if i < 0 || i >= len(d.data) {
		return 0, fmt.Errorf("FST node reads byte %d outside %d", i, len(d.data))
	}
	return d.data[i], nil
}

// uint reads n little-endian bytes at i.
func (d *fstDec) uint(i, n int) (uint64, error) {
	if n > 8 || i < 0 || i+n > len(d.data) {
		return 0, fmt.Errorf("FST node reads %d bytes at %d outside %d", n, i, len(d.data))
	}
	var v uint64
	for k := n - 1; k >= 0; k-- {
		v = v<<8 | uint64(d.data[i+k])
	}
	return v, nil
}

// delta turns a transition delta, packed relative to the node's lowest
// byte, into an address (0 = the empty final node).
func delta(node int, dl uint64) (int, error) {
	if dl == 0 {
		return 0, nil
	}
	if dl > uint64(node) {
		return 0, fmt.Errorf("FST transition delta %d beyond node %d", dl, node)
	}
	return node - int(dl), nil
}

func (d *fstDec) node(addr int) (fstNode, error) {
	if addr == 0 {
		return fstNode{final: true}, nil
	}
	s, err := d.at(addr)
	if err != nil {
		return fstNode{}, err
	}
	switch s >> 6 {
	case 0b11: // one transition to the node just below, no output
		inp, pos := byte(0), addr
		if c := s & 63; c != 0 {
			inp = commonInputs[c-1]
		} else {
			pos--
			if inp, err = d.at(pos); err != nil {
				return fstNode{}, err
			}
		}
		return fstNode{trans: []fstTrans{{inp: inp, addr: pos - 1}}}, nil
	case 0b10: // one transition
		inp, pos := byte(0), addr
		if c := s & 63; c != 0 {
			inp = commonInputs[c-1]
		} else {
			pos--
			if inp, err = d.at(pos); err != nil {
				return fstNode{}, err
			}
		}
		pos--
		ps, err := d.at(pos)
		if err != nil {
			return fstNode{}, err
		}
		tsize, osize := int(ps>>4), int(ps&15)
		dl, err := d.uint(pos-tsize, tsize)
		if err != nil {
			return fstNode{}, err
		}
		t := fstTrans{inp: inp}
		if t.addr, err = delta(pos-tsize-osize, dl); err != nil {
			return fstNode{}, err
		}
		if osize > 0 {
			if t.out, err = d.uint(pos-tsize-osize, osize); err != nil {
				return fstNode{}, err
			}
		}
		return fstNode{trans: []fstTrans{t}}, nil
	default: // any number of transitions
		n := fstNode{final: s&0x40 != 0}
		ntrans, pos := int(s&63), addr
		if ntrans == 0 {
			pos--
			v, err := d.at(pos)
			if err != nil {
				return fstNode{}, err
			}
			ntrans = int(v)
			if ntrans == 1 {
				ntrans = 256
			}
		}
		pos--
		ps, err := d.at(pos)
		if err != nil {
			return fstNode{}, err
		}
		tsize, osize := int(ps>>4), int(ps&15)
		if tsize > 8 || osize > 8 {
			return fstNode{}, fmt.Errorf("FST node %d pack sizes %d/%d", addr, tsize, osize)
		}
		if ntrans > transIndexMin {
			pos -= transIndexSize
		}
		// inputs (reversed), then addresses (reversed), then outputs
		// (reversed), then the final output.
		inputs := pos - ntrans
		addrs := inputs - ntrans*tsize
		outs := addrs - ntrans*osize
		if outs-osize < 0 {
			return fstNode{}, fmt.Errorf("FST node %d of %d transitions starts before the blob", addr, ntrans)
		}
		nodeEnd := outs
		if n.final {
			nodeEnd -= osize
		}
		n.trans = make([]fstTrans, ntrans)
		for i := range ntrans {
			t := &n.trans[i]
			t.inp = d.data[pos-i-1]
			dl, err := d.uint(inputs-(i+1)*tsize, tsize)
			if err != nil {
				return fstNode{}, err
			}
			if t.addr, err = delta(nodeEnd, dl); err != nil {
				return fstNode{}, err
			}
			if osize > 0 {
				if t.out, err = d.uint(addrs-(i+1)*osize, osize); err != nil {
					return fstNode{}, err
				}
			}
		}
		if n.final && osize > 0 {
			if n.finalOut, err = d.uint(outs-osize, osize); err != nil {
				return fstNode{}, err
			}
		}
		return n, nil
	}
}

func (d *fstDec) walk(addr int, key []byte, out uint64) error {
	d.budget--
	if d.budget < 0 {
		return fmt.Errorf("FST walk does not end (a cycle)")
	}
	if len(key) > maxTokenBytes {
		return fmt.Errorf("FST key longer than %d bytes", maxTokenBytes)
	}
	n, err := d.node(addr)
	if err != nil {
		return err
	}
	if n.final {
		v := out + n.finalOut
		if v > 1<<32-1 {
			return fmt.Errorf("FST token id %d", v)
		}
		if len(d.out) >= d.max {
			return fmt.Errorf("FST holds more keys than its footer's %d", d.max)
		}
		d.out[string(key)] = uint32(v)
	}
	for _, t := range n.trans {
		if t.addr >= addr && t.addr != 0 {
			return fmt.Errorf("FST transition from %d up to %d", addr, t.addr)
		}
		if err := d.walk(t.addr, append(key, t.inp), out+t.out); err != nil {
			return err
		}
	}
	return nil
}
