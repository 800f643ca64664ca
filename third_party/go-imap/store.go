package imap

// StoreOptions contains options for the STORE command.
type StoreOptions struct {
	UnchangedSince uint64 // requires CONDSTORE

	// mailhost patch: HasUnchangedSince says the UNCHANGEDSINCE modifier
	// was given, so that UNCHANGEDSINCE 0, which no message passes (RFC
	// 7162 section 3.1.3), is told from none.
	HasUnchangedSince bool
}

// StoreFlagsOp is a flag operation: set, add or delete.
type StoreFlagsOp int

const (
	StoreFlagsSet StoreFlagsOp = iota
	StoreFlagsAdd
	StoreFlagsDel
)

// StoreFlags alters message flags.
type StoreFlags struct {
	Op     StoreFlagsOp
	Silent bool
	Flags  []Flag
}
