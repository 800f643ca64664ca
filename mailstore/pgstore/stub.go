package pgstore

import "errors"

// errNotImplemented marks methods not written yet (scaffolding; none may remain when the package is used).
var errNotImplemented = errors.New("pgstore: not implemented")
