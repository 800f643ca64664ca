package imapserver

import (
	"fmt"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/internal/imapwire"
)

func (c *Conn) handleCapability(dec *imapwire.Decoder) error {
	if !dec.ExpectCRLF() {
		return dec.Err()
	}

	enc := newResponseEncoder(c)
	defer enc.end()
	enc.Atom("*").SP().Atom("CAPABILITY")
	for _, c := range c.availableCaps() {
		enc.SP().Atom(string(c))
	}
	return enc.CRLF()
}

// availableCaps returns the capabilities supported by the server.
//
// They depend on the connection state.
//
// Some extensions (e.g. SASL-IR, ENABLE) don't require backend support and
// thus are always enabled.
func (c *Conn) availableCaps() []imap.Cap {
	available := c.server.options.caps()

	var caps []imap.Cap
	addAvailableCaps(&caps, available, []imap.Cap{
		imap.CapIMAP4rev2,
		imap.CapIMAP4rev1,
	})
	if len(caps) == 0 {
		panic("imapserver: must support at least IMAP4rev1 or IMAP4rev2")
	}

	if available.Has(imap.CapIMAP4rev1) {
		caps = append(caps, []imap.Cap{
			imap.CapSASLIR,
			imap.CapLiteralMinus,
		}...)
	}
	if c.canStartTLS() {
		caps = append(caps, imap.CapStartTLS)
	}
	if c.canAuth() {
		mechs := []string{"PLAIN"}
		if authSess, ok := c.session.(SessionSASL); ok {
			mechs = authSess.AuthenticateMechanisms()
		}
		for _, mech := range mechs {
			caps = append(caps, imap.Cap("AUTH="+mech))
		}
	} else if c.state == imap.ConnStateNotAuthenticated {
		caps = append(caps, imap.CapLoginDisabled)
	}
	if c.state == imap.ConnStateAuthenticated || c.state == imap.ConnStateSelected {
		if available.Has(imap.CapIMAP4rev1) {
			// IMAP4rev1-specific capabilities that don't require backend
			// support and are not applicable to IMAP4rev2
			caps = append(caps, []imap.Cap{
				imap.CapUnselect,
				imap.CapEnable,
				imap.CapIdle,
				imap.CapUTF8Accept,
			}...)

			// IMAP4rev1-specific capabilities which require backend support
			// and are not applicable to IMAP4rev2
			addAvailableCaps(&caps, available, []imap.Cap{
				imap.CapNamespace,
				imap.CapUIDPlus,
				imap.CapESearch,
				imap.CapSearchRes,
				imap.CapListExtended,
				imap.CapListStatus,
				imap.CapMove,
				imap.CapStatusSize,
				imap.CapBinary,
				imap.CapChildren,
			})
		}

		// Capabilities which require backend support and apply to both
		// IMAP4rev1 and IMAP4rev2
		addAvailableCaps(&caps, available, []imap.Cap{
			imap.CapSpecialUse,
			imap.CapCreateSpecialUse,
			imap.CapLiteralPlus,
			imap.CapUnauthenticate,
			// mailhost patch: RFC 7162, served by SessionQResync and the
			// CONDSTORE items, modifiers and responses of condstore.go.
			imap.CapCondStore,
			imap.CapQResync,
			// mailhost patch: RFC 3502 (append.go), RFC 5032 and RFC 8474
			// (search keys in search.go), RFC 8970 (fetch.go, objectid.go).
			imap.CapMultiAppend,
			imap.CapWithin,
			imap.CapObjectID,
			imap.CapPreview,
		})
		// mailhost patch: RFC 5256, RFC 5957, RFC 5267, served by
		// SessionSort and SessionThread (sort.go).
		caps = append(caps, sortCaps(available)...)

		if appendLimitSession, ok := c.session.(SessionAppendLimit); ok {
			limit := appendLimitSession.AppendLimit()
			caps = append(caps, imap.Cap(fmt.Sprintf("APPENDLIMIT=%d", limit)))
		} else {
			addAvailableCaps(&caps, available, []imap.Cap{imap.CapAppendLimit})
		}
	}
	// mailhost patch: the session's own changes (SessionCaps).
	if sc, ok := c.session.(SessionCaps); ok {
		caps = sc.Caps(caps)
	}
	return caps
}

// SessionCaps is a session that changes the capabilities imapserver lists
// in CAPABILITY responses and in the [CAPABILITY] codes of the greeting,
// LOGIN and AUTHENTICATE: to add those of commands it serves itself
// (SessionCommands: ID, QUOTA, COMPRESS=DEFLATE), or to list STARTTLS,
// LOGINDISABLED and AUTH= from what it knows of the transport when it does
// TLS itself (Upgrade).
//
// mailhost patch: see PATCHES.md.
type SessionCaps interface {
	Session

	// Caps returns the capabilities to list, given caps, those imapserver
	// lists in the connection's current state. It may change caps in
	// place.
	Caps(caps []imap.Cap) []imap.Cap
}

func addAvailableCaps(caps *[]imap.Cap, available imap.CapSet, l []imap.Cap) {
	for _, c := range l {
		if available.Has(c) {
			*caps = append(*caps, c)
		}
	}
}
