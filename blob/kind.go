package blob

// IsObjectStore reports whether s keeps its objects in an object store
// (S3, GCS, Azure: a CloudStore), looking through Sub views and wrappers
// that have an Unwrap() Store method (retries, counting, fault injection).
// Writers use it where Lance itself behaves differently on object stores:
// Lance writes _versions/latest_version_hint.json only on file systems,
// since object stores list versions cheaply and a hint would cost a PUT per
// commit.
func IsObjectStore(s Store) bool {
	for {
		switch st := s.(type) {
		case *CloudStore:
			return true
		case *subStore:
			s = st.parent
		case interface{ Unwrap() Store }:
			s = st.Unwrap()
		default:
			return false
		}
	}
}
