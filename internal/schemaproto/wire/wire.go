// Package wire lets internal/schemaproto reach what format/schema keeps,
// unexported, of a stored field that this lancer does not know: the wire
// bytes of the lance.file.Field (and nested Dictionary) fields of newer
// writers, which must be written back unchanged (dataset/manifest's M4).
// Package schema sets Of when it is initialized; nothing else uses it.
package wire

// Unknown is what a stored field holds that this lancer does not know, as
// protobuf wire bytes: those of the Field message and of its Dictionary.
type Unknown struct {
	Field, Dictionary []byte
}

// Of returns the Unknown of a *schema.Field. Package schema sets it.
var Of func(field any) *Unknown
