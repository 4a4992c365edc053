// Package pb holds lancer's protobuf definitions of the Lance format and the
// Go code generated from them. Package pb itself has no code; the messages
// live in one Go package per protobuf package:
//
//	proto package       file(s)                                            Go package
//	lance.file          filepb/file.proto                                  filepb
//	lance.file.v2       file2pb/file2.proto                                file2pb
//	lance.encodings     encpb/encodings_v2_0.proto                         encpb
//	lance.encodings21   enc21pb/encodings_v2_1.proto                       enc21pb
//	lance.table         tablepb/{table,transaction,rowids,index_old}.proto tablepb
//	lance.index.pb      indexpb/index.proto                                indexpb
//	lancer.index        lancerpb/lancer_index.proto                        lancerpb (lancer's own)
//
// The .proto files were written for lancer from the Lance format specification
// (our own text); package, message, enum and field names and field numbers
// mirror Lance's own definitions exactly (checked against the newest Lance
// sources), because the wire format and the google.protobuf.Any type URLs
// that Lance stores (for example "/lance.encodings21.PageLayout",
// "/lance.table.BTreeIndexDetails") depend on them. Real Lance output decodes
// with no unknown fields left; see pb_test.go.
//
// The proto import root is this directory, so files import each other as
// "filepb/file.proto", "tablepb/table.proto", and so on.
//
// The generated *.pb.go files are committed. After editing a .proto file run
//
//	go generate ./internal/pb
//
// which runs internal/protogen: it parses the protos with protocompile and
// runs protoc-gen-go's generator in-process, so no protoc binary is needed.
// The output is deterministic; TestGeneratedCodeIsCurrent fails when the
// committed files differ from what the generator produces.
package pb

//go:generate go run ./internal/protogen
