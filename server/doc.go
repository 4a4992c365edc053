// Package server is lancer's HTTP API: LanceDB's remote protocol, so the
// official LanceDB clients work against lancer unchanged, plus endpoints for
// branches and a browser UI.
//
// (Not yet implemented: this package is filled in by the server work.)
package server
