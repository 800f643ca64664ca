package imapserver

// mailhost patch: SORT, THREAD and ESORT (RFC 5256, RFC 5957, RFC 5267).
// Everything of this file is new; readCommand and availableCaps call into
// it where marked.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/internal/imapwire"
)

// SortKey is a SORT key (RFC 5256 section 3; DISPLAYFROM and DISPLAYTO of
// RFC 5957).
type SortKey string

const (
	SortKeyArrival     SortKey = "ARRIVAL"
	SortKeyCc          SortKey = "CC"
	SortKeyDate        SortKey = "DATE"
	SortKeyFrom        SortKey = "FROM"
	SortKeySize        SortKey = "SIZE"
	SortKeySubject     SortKey = "SUBJECT"
	SortKeyTo          SortKey = "TO"
	SortKeyDisplayFrom SortKey = "DISPLAYFROM"
	SortKeyDisplayTo   SortKey = "DISPLAYTO"
)

// SortCriterion is one sort criterion: a key, reversed or not.
type SortCriterion struct {
	Key     SortKey
	Reverse bool
}

// SessionSort is an IMAP session which supports SORT and UID SORT (RFC
// 5256), offered with the SORT capability.
type SessionSort interface {
	Session

	// Sort answers the messages matching criteria, numbers or UIDs as
	// kind says, in the order sortCriteria make.
	Sort(kind NumKind, sortCriteria []SortCriterion, criteria *imap.SearchCriteria) (*SortData, error)
}

// SortData is SORT's answer.
type SortData struct {
	// Nums are the messages' numbers or UIDs, in sort order.
	Nums []uint32
	// ModSeq is the highest mod-sequence of the messages, for a search
	// with the MODSEQ key (RFC 7162 section 3.1.5), else 0.
	ModSeq uint64
}

// ThreadNode is one node of a THREAD answer's tree: a message's number or
// UID, or 0 for a message that is not there (RFC 5256 section 4), with the
// nodes below it.
type ThreadNode struct {
	Num      uint32
	Children []*ThreadNode
}

// SessionThread is an IMAP session which supports THREAD and UID THREAD
// (RFC 5256), offered with the THREAD=algorithm capabilities.
type SessionThread interface {
	Session

	// Thread answers the threads of the messages matching criteria, by
	// algorithm, one of those offered; numbers or UIDs as kind says.
	Thread(kind NumKind, algorithm imap.ThreadAlgorithm, criteria *imap.SearchCriteria) ([]*ThreadNode, error)
}

// sortCaps are the capabilities of this file, offered when Options.Caps
// has them.
func sortCaps(available imap.CapSet) []imap.Cap {
	var caps []imap.Cap
	addAvailableCaps(&caps, available, []imap.Cap{imap.CapSort, imap.CapSortDisplay, imap.CapESort})
	// ThreadAlgorithms answers in map order: sorted, the list is the
	// same from one CAPABILITY to the next.
	algs := available.ThreadAlgorithms()
	slices.Sort(algs)
	for _, alg := range algs {
		caps = append(caps, imap.Cap("THREAD="+string(alg)))
	}
	return caps
}

// handleSort serves SORT and UID SORT: "SORT" [SP sort-return-opts] SP
// sort-criteria SP search-criteria (RFC 5256 section 5, RFC 5267 section
// 3.2).
func (c *Conn) handleSort(tag string, dec *imapwire.Decoder, numKind NumKind) error {
	caps := c.server.options.caps()
	session, ok := c.session.(SessionSort)
	if !ok || !caps.Has(imap.CapSort) {
		return newClientBugError("Unknown command")
	}
	if !dec.ExpectSP() {
		return dec.Err()
	}
	var (
		options  imap.SearchOptions
		extended bool
		atom     string
	)
	if dec.Atom(&atom) {
		if !strings.EqualFold(atom, "RETURN") || !caps.Has(imap.CapESort) {
			return newClientBugError("Expected sort criteria")
		}
		if err := readSearchReturnOpts(dec, &options); err != nil {
			return fmt.Errorf("in sort-return-opts: %w", err)
		}
		if options.ReturnSave {
			return newClientBugError("SAVE is not supported with SORT")
		}
		if !options.ReturnMin && !options.ReturnMax && !options.ReturnAll && !options.ReturnCount {
			options.ReturnAll = true // RFC 4731 section 3.1
		}
		if !dec.ExpectSP() {
			return dec.Err()
		}
		extended = true
	}
	sortCriteria, err := readSortCriteria(dec, caps.Has(imap.CapSortDisplay))
	if err != nil {
		return err
	}
	if !dec.ExpectSP() {
		return dec.Err()
	}
	criteria, err := readSearchCharsetCriteria(dec)
	if err != nil {
		return err
	}
	if err := c.checkState(imap.ConnStateSelected); err != nil {
		return err
	}
	if searchHasModSeq(criteria) {
		c.enableCondStore() // RFC 7162 section 3.1: SORT with MODSEQ enables CONDSTORE
	}
	data, err := session.Sort(numKind, sortCriteria, criteria)
	if err != nil {
		return err
	}
	if extended {
		return c.writeESearch(tag, sortedSearchData(data, numKind), &options, numKind)
	}
	return c.writeSort(data)
}

// readSortCriteria reads sort-criteria: "(" sort-criterion *(SP
// sort-criterion) ")", sort-criterion = ["REVERSE" SP] sort-key.
func readSortCriteria(dec *imapwire.Decoder, display bool) ([]SortCriterion, error) {
	var (
		out     []SortCriterion
		reverse bool
	)
	err := dec.ExpectList(func() error {
		var name string
		if !dec.ExpectAtom(&name) {
			return dec.Err()
		}
		key := SortKey(strings.ToUpper(name))
		if key == "REVERSE" {
			if reverse {
				return newClientBugError("REVERSE needs a sort key after it")
			}
			reverse = true
			return nil
		}
		switch key {
		case SortKeyArrival, SortKeyCc, SortKeyDate, SortKeyFrom, SortKeySize, SortKeySubject, SortKeyTo:
		case SortKeyDisplayFrom, SortKeyDisplayTo:
			if !display {
				return newClientBugError("Unknown sort key")
			}
		default:
			return newClientBugError("Unknown sort key")
		}
		out = append(out, SortCriterion{Key: key, Reverse: reverse})
		reverse = false
		return nil
	})
	if err != nil {
		return nil, err
	}
	if reverse || len(out) == 0 {
		return nil, newClientBugError("REVERSE needs a sort key after it")
	}
	return out, nil
}

// readSearchCharsetCriteria reads what SORT and THREAD end with: charset
// SP search-criteria CRLF (RFC 5256 section 5).
func readSearchCharsetCriteria(dec *imapwire.Decoder) (*imap.SearchCriteria, error) {
	var charset string
	if !dec.ExpectAString(&charset) || !dec.ExpectSP() {
		return nil, dec.Err()
	}
	if err := checkSearchCharset(charset); err != nil {
		return nil, err
	}
	criteria, err := readSearchCriteria(dec, "")
	if err != nil {
		return nil, err
	}
	if !dec.ExpectCRLF() {
		return nil, dec.Err()
	}
	return criteria, nil
}

// sortedSearchData is ESEARCH's data for a sorted answer (RFC 5267 section
// 3.1): MIN and MAX are the first and last messages in sort order, and
// ALL lists the messages in that order.
func sortedSearchData(sorted *SortData, numKind NumKind) *imap.SearchData {
	nums := sorted.Nums
	data := &imap.SearchData{Count: uint32(len(nums)), ModSeq: sorted.ModSeq}
	if len(nums) > 0 {
		data.Min, data.Max = nums[0], nums[len(nums)-1]
	}
	var ranges [][2]uint32
	for _, n := range nums {
		if l := len(ranges); l > 0 && ranges[l-1][1]+1 == n {
			ranges[l-1][1] = n
			continue
		}
		ranges = append(ranges, [2]uint32{n, n})
	}
	if numKind == NumKindUID {
		set := make(imap.UIDSet, 0, len(ranges))
		for _, r := range ranges {
			set = append(set, imap.UIDRange{Start: imap.UID(r[0]), Stop: imap.UID(r[1])})
		}
		data.All = set
	} else {
		set := make(imap.SeqSet, 0, len(ranges))
		for _, r := range ranges {
			set = append(set, imap.SeqRange{Start: r[0], Stop: r[1]})
		}
		data.All = set
	}
	return data
}

// writeSort writes a SORT response: "* SORT" *(SP nz-number), then "(MODSEQ
// n)" for a search with the MODSEQ key (RFC 7162 section 3.1.5).
func (c *Conn) writeSort(data *SortData) error {
	enc := newResponseEncoder(c)
	defer enc.end()
	enc.Atom("*").SP().Atom("SORT")
	for _, n := range data.Nums {
		enc.SP().Number(n)
	}
	if data.ModSeq != 0 && len(data.Nums) > 0 {
		enc.SP().Special('(').Atom("MODSEQ").SP().ModSeq(data.ModSeq).Special(')')
	}
	return enc.CRLF()
}

// handleThread serves THREAD and UID THREAD: "THREAD" SP thread-alg SP
// search-criteria (RFC 5256 section 5).
func (c *Conn) handleThread(dec *imapwire.Decoder, numKind NumKind) error {
	session, ok := c.session.(SessionThread)
	algs := c.server.options.caps().ThreadAlgorithms()
	if !ok || len(algs) == 0 {
		return newClientBugError("Unknown command")
	}
	var name string
	if !dec.ExpectSP() || !dec.ExpectAtom(&name) || !dec.ExpectSP() {
		return dec.Err()
	}
	var algorithm imap.ThreadAlgorithm
	for _, alg := range algs {
		if strings.EqualFold(name, string(alg)) {
			algorithm = alg
		}
	}
	if algorithm == "" {
		return newClientBugError("Unknown threading algorithm")
	}
	criteria, err := readSearchCharsetCriteria(dec)
	if err != nil {
		return err
	}
	if err := c.checkState(imap.ConnStateSelected); err != nil {
		return err
	}
	threads, err := session.Thread(numKind, algorithm, criteria)
	if err != nil {
		return err
	}
	return c.writeThread(threads)
}

// writeThread writes a THREAD response: "* THREAD" [SP 1*thread-list].
func (c *Conn) writeThread(threads []*ThreadNode) error {
	enc := newResponseEncoder(c)
	defer enc.end()
	enc.Atom("*").SP().Atom("THREAD")
	if len(threads) > 0 {
		enc.SP()
	}
	for _, t := range threads {
		enc.Special('(')
		writeThreadNode(enc.Encoder, t)
		enc.Special(')')
	}
	return enc.CRLF()
}

// writeThreadNode writes a node and what is below it (RFC 5256 section 4):
// a message with one child is followed by it ("1 2"), one with several by
// each in parentheses ("1 (2)(3)"); a missing message writes nothing of
// its own.
func writeThreadNode(enc *imapwire.Encoder, n *ThreadNode) {
	if n.Num != 0 {
		enc.Number(n.Num)
		if len(n.Children) > 0 {
			enc.SP()
		}
	}
	if len(n.Children) == 1 {
		writeThreadNode(enc, n.Children[0])
		return
	}
	for _, child := range n.Children {
		enc.Special('(')
		writeThreadNode(enc, child)
		enc.Special(')')
	}
}
