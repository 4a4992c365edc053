package manifest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/internal/pb/tablepb"
)

// A manifest file is a small legacy-layout Lance file (doc.go, M1):
//
//	[u32 len | IndexSection]   optional, position in Manifest.index_section
//	[u32 len | Transaction]    optional, position in Manifest.transaction_section
//	u32 len | Manifest
//	footer (16 B): u64 manifest_pos | u16 major | u16 minor | "LANC"
//
// The manifest ends exactly where the footer begins. The footer's version is
// always 0.2 and carries no meaning, so only the magic is checked.
const (
	manifestMagic      = "LANC"
	manifestFooterSize = 16
	// manifestTailSize is the first read of a manifest file: most manifests
	// fit entirely, so one request usually fetches the whole file.
	manifestTailSize = 64 << 10
)

// TransactionsDir is where transaction files live, beside _versions/.
const TransactionsDir = "_transactions/"

// manifestFile reads a manifest file, serving ranges from the tail it read
// first and fetching the rest on demand.
type manifestFile struct {
	store     blob.Store
	key       string
	size      int64
	tail      []byte
	tailStart int64
}

// Location names a key of a store in error messages.
func Location(store blob.Store, key string) string {
	return strings.TrimSuffix(store.URI(), "/") + "/" + key
}

func (f *manifestFile) where() string { return Location(f.store, f.key) }

func (f *manifestFile) corruptf(format string, args ...any) error {
	return fmt.Errorf("dataset: manifest %s: %s: %w", f.where(), fmt.Sprintf(format, args...), lancer.ErrCorrupt)
}

// openManifestFile reads the tail of the manifest at key; size is the file's
// length if known, else 0.
func openManifestFile(ctx context.Context, store blob.Store, key string, size int64) (*manifestFile, error) {
	f := &manifestFile{store: store, key: key, size: size}
	if f.size <= 0 {
		info, err := store.Stat(ctx, key)
		if err != nil {
			return nil, fmt.Errorf("dataset: manifest %s: %w", f.where(), err)
		}
		f.size = info.Size
	}
	if f.size < manifestFooterSize+4 {
		return nil, f.corruptf("file of %d bytes is too short for a manifest", f.size)
	}
	n := min(f.size, manifestTailSize)
	tail, err := store.ReadRange(ctx, key, f.size-n, n)
	if err != nil {
		return nil, fmt.Errorf("dataset: manifest %s: %w", f.where(), err)
	}
	f.tail, f.tailStart = tail, f.size-n
	return f, nil
}

// readAt returns bytes [off, off+n) of the file, which the caller has checked
// lie inside it.
func (f *manifestFile) readAt(ctx context.Context, off, n int64) ([]byte, error) {
	if off >= f.tailStart {
		return f.tail[off-f.tailStart : off-f.tailStart+n], nil
	}
	b, err := f.store.ReadRange(ctx, f.key, off, n)
	if err != nil {
		return nil, fmt.Errorf("dataset: manifest %s: %w", f.where(), err)
	}
	return b, nil
}

// section returns the body of the u32-length-prefixed section at pos, which
// must end at or before end (the footer). exact demands it end exactly there.
func (f *manifestFile) section(ctx context.Context, what string, pos uint64, end int64, exact bool) ([]byte, error) {
	if pos > uint64(end) || uint64(end)-pos < 4 {
		return nil, f.corruptf("%s position %d leaves no room for its length before byte %d", what, pos, end)
	}
	lenBytes, err := f.readAt(ctx, int64(pos), 4)
	if err != nil {
		return nil, err
	}
	n := int64(binary.LittleEndian.Uint32(lenBytes))
	bodyStart := int64(pos) + 4
	switch {
	case exact && bodyStart+n != end:
		return nil, f.corruptf("%s at %d claims %d bytes but %d lie before the footer", what, pos, n, end-bodyStart)
	case bodyStart+n > end:
		return nil, f.corruptf("%s at %d claims %d bytes, running past byte %d", what, pos, n, end)
	}
	return f.readAt(ctx, bodyStart, n)
}

// File is what ReadFile decodes from one manifest file.
type File struct {
	// Manifest is the validated manifest, with its index segments.
	Manifest *Manifest
	// Transaction is the version's transaction when ReadFile was asked for
	// it and the version records one; nil otherwise.
	Transaction *Transaction
}

// ReadFile reads and validates the manifest file at key (size 0 =
// unknown), with its index section. withTxn also loads the transaction,
// from the inline section or else from _transactions/.
func ReadFile(ctx context.Context, store blob.Store, key string, size int64, withTxn bool) (*File, error) {
	f, err := openManifestFile(ctx, store, key, size)
	if err != nil {
		return nil, err
	}
	footer := f.tail[len(f.tail)-manifestFooterSize:]
	if string(footer[12:]) != manifestMagic {
		return nil, f.corruptf("bad magic %q at end of file, want %q", footer[12:], manifestMagic)
	}
	footerStart := f.size - manifestFooterSize
	pos := binary.LittleEndian.Uint64(footer)
	body, err := f.section(ctx, "manifest", pos, footerStart, true)
	if err != nil {
		return nil, err
	}
	var pm tablepb.Manifest
	if err := proto.Unmarshal(body, &pm); err != nil {
		return nil, f.corruptf("manifest protobuf: %v", err)
	}
	if ts := pm.GetTimestamp(); ts != nil {
		if err := ts.CheckValid(); err != nil {
			return nil, f.corruptf("timestamp: %v", err)
		}
	}
	m := manifestFromPB(&pm)
	if pm.IndexSection != nil {
		raw, err := f.section(ctx, "index section", pm.GetIndexSection(), footerStart, false)
		if err != nil {
			return nil, err
		}
		var sec tablepb.IndexSection
		if err := proto.Unmarshal(raw, &sec); err != nil {
			return nil, f.corruptf("index section protobuf: %v", err)
		}
		m.segments = indicesFromPB(sec.GetIndices())
	}
	if err := m.Validate(f.where()); err != nil {
		return nil, err
	}
	if err := f.loadDictionaries(ctx, m, footerStart); err != nil {
		return nil, err
	}
	if err := f.loadFragReuse(ctx, m); err != nil {
		return nil, err
	}
	c := &File{Manifest: m}
	if withTxn {
		if c.Transaction, err = f.transaction(ctx, &pm, footerStart); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// transaction loads the version's transaction: the inline copy if there is
// one, else _transactions/<transaction_file>. A version without either, or
// whose file was cleaned up, has none (nil, nil).
func (f *manifestFile) transaction(ctx context.Context, pm *tablepb.Manifest, footerStart int64) (*Transaction, error) {
	var raw []byte
	where := f.where()
	switch {
	case pm.TransactionSection != nil:
		var err error
		if raw, err = f.section(ctx, "transaction section", pm.GetTransactionSection(), footerStart, false); err != nil {
			return nil, err
		}
	case pm.GetTransactionFile() != "":
		// Transaction files live next to _versions/ in the same root.
		dir, _, _ := strings.Cut(f.key, "_versions/")
		key := dir + TransactionsDir + pm.GetTransactionFile()
		where = Location(f.store, key)
		var err error
		raw, err = f.store.ReadAll(ctx, key)
		switch {
		case errors.Is(err, lancer.ErrNotFound):
			return nil, nil
		case err != nil:
			return nil, fmt.Errorf("dataset: transaction %s: %w", where, err)
		}
	default:
		return nil, nil
	}
	txn, err := DecodeTransaction(raw)
	if err != nil {
		return nil, fmt.Errorf("dataset: transaction of %s: %w", where, err)
	}
	return txn, nil
}

// EncodeFile lays out a manifest file as Lance writes it: the index section
// (if m has index segments) at 0, the transaction txn (encoded) after it,
// the manifest, and the footer. The manifest records the section
// positions. A nil txn writes no transaction section (as Lance versions
// before inline transactions did: readers then use TransactionFile).
func EncodeFile(m *Manifest, txn []byte) ([]byte, error) {
	buf, dicts, err := appendDictionaries(m, nil)
	if err != nil {
		return nil, err
	}
	appendSection := func(b []byte) (uint64, error) {
		if len(b) > math.MaxUint32 {
			return 0, fmt.Errorf("dataset: manifest section of %d bytes exceeds 4 GiB: %w", len(b), lancer.ErrInvalidArgument)
		}
		pos := uint64(len(buf))
		buf = binary.LittleEndian.AppendUint32(buf, uint32(len(b)))
		buf = append(buf, b...)
		return pos, nil
	}
	p := manifestToPB(m)
	for _, pf := range p.Fields {
		if d, ok := dicts[pf.GetId()]; ok && pf.Dictionary != nil {
			pf.Dictionary.Offset, pf.Dictionary.Length = d.Offset, d.Length
		}
	}
	if len(m.segments) > 0 {
		sec, err := marshalOpts.Marshal(&tablepb.IndexSection{Indices: indicesToPB(m.segments)})
		if err != nil {
			return nil, fmt.Errorf("dataset: encode index section: %w", err)
		}
		pos, err := appendSection(sec)
		if err != nil {
			return nil, err
		}
		p.IndexSection = &pos
	}
	if txn != nil {
		pos, err := appendSection(txn)
		if err != nil {
			return nil, err
		}
		p.TransactionSection = &pos
	}
	body, err := marshalOpts.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("dataset: encode manifest: %w", err)
	}
	mpos, err := appendSection(body)
	if err != nil {
		return nil, err
	}
	buf = binary.LittleEndian.AppendUint64(buf, mpos)
	buf = binary.LittleEndian.AppendUint16(buf, 0)
	buf = binary.LittleEndian.AppendUint16(buf, 2)
	buf = append(buf, manifestMagic...)
	return buf, nil
}
