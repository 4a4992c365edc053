package schema

// DictionaryValues are the values of a legacy dictionary field in key
// order, each as its bytes: a binary-like value's bytes, an integer's
// little-endian bytes. A legacy dataset keeps them in its manifest file,
// and Lance 12 decodes the keys of every data file with them (not with the
// copy each file stores), so the files lancer writes key their rows into
// these values and store them as the file's copy. They are read-only once
// made: writers running at once may share them.
type DictionaryValues struct {
	Values [][]byte
	keys   map[string]int
}

// NewDictionaryValues indexes values (which it keeps, not copies). A value
// repeated keeps its first key.
func NewDictionaryValues(values [][]byte) *DictionaryValues {
	d := &DictionaryValues{Values: values, keys: make(map[string]int, len(values))}
	for i, v := range values {
		if _, ok := d.keys[string(v)]; !ok {
			d.keys[string(v)] = i
		}
	}
	return d
}

// Key returns the key of value v, or false when v is not one of the
// values.
func (d *DictionaryValues) Key(v []byte) (int, bool) {
	k, ok := d.keys[string(v)]
	return k, ok
}
