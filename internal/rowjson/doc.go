// Package rowjson prints Arrow rows as JSON, in exactly the row encoding of
// the Lance compatibility fixtures ($LANCER_FIXTURES, defined in the
// header of their gen.mjs). It is what `lancer scan --format jsonl` prints, and
// what fixture tests feed to fixturetest.CompareRows, so a row that lancer
// reads can be compared with the row real Lance reported for it.
//
// # Encoding
//
// One value per Arrow type (null at any level prints null):
//
//	int8..int32, uint8..uint32  JSON number
//	int64, uint64               exact integer literal (may exceed 2^53; decode with json.Number)
//	float16, float32, float64   JSON number: the value widened exactly to float64 and printed
//	                            as JavaScript prints a number, the shortest text that reads
//	                            back as the same float64 (float32 0.7 → 0.699999988079071,
//	                            1e21 → 1e+21, 1e-7 → 1e-7). JSON has no numbers for NaN and
//	                            ±Inf: they print as the strings "NaN", "Infinity" and
//	                            "-Infinity" (the proto3 JSON mapping's and Spark's spelling,
//	                            and JavaScript's String(x)), and -0 prints -0.0. Here the
//	                            encoding parts from JSON.stringify, which prints null and 0
//	                            and so loses the value; the fixtures hold none of them.
//	bool                        true / false
//	utf8, large_utf8, utf8_view JSON string (escaped as JSON.stringify does; invalid UTF-8
//	                            becomes U+FFFD, as a JavaScript TextDecoder would make it)
//	binary, large_binary,       base64, standard alphabet with padding
//	fixed_size_binary, view
//	date32                      integer days since 1970-01-01
//	date64                      integer milliseconds since 1970-01-01
//	timestamp                   raw integer in the column's unit (the time zone is not applied)
//	time32, time64, duration    raw integer in the type's unit
//	decimal32/64/128/256(p,s)   string with exactly s fraction digits: "-12.345", "0.000".
//	                            For s <= 0 it is the integer value, unscaled·10^-s
//	                            ("12300" for unscaled 123 at s = -2). gen.mjs would print the
//	                            bare unscaled digits there; no fixture has a negative scale,
//	                            and printing the true value keeps scan output honest.
//	dictionary                  the decoded value
//	list, large_list, list_view,
//	fixed_size_list             JSON array
//	struct                      JSON object, members in schema order
//	map                         [[key, value], ...] in stored order
//	null                        null
//	extension                   its storage array's encoding
//	run_end_encoded             the value of the run the row falls in
//
// Union and interval types are not part of the fixture encoding and fail with
// an error wrapping lancer.ErrUnsupported that names the type, as does a
// decimal whose scale lies outside [-128, 127] (Lance's Arrow keeps the scale
// in a signed byte; a wider one would print that many zeros per value).
//
// # Round trip
//
// Every value prints so that package importer reads it back exactly into a
// column of the same type (`lancer scan --format jsonl | lancer import
// --mode append`): integers as exact literals, floats as the shortest text
// that reads back as the same bits (a float32 read as a float32 from its
// float64 text is the same float32), NaN, ±Inf and -0 as above. Only the
// payload of a NaN is not kept: every NaN prints "NaN".
//
// Output is compact (no spaces), as JSON.stringify prints. The fixtures'
// expected.json files are pretty-printed, so compare rows semantically
// (fixturetest.CompareRows), never byte for byte.
//
// # Cost
//
// The functions append to a caller-owned buffer and allocate nothing per
// value except for decimals wider than 64 bits that do not fit in an int64;
// no reflection, no maps. WriteJSONL reuses one buffer per batch.
package rowjson
