package adminapi

import (
	"runtime"

	"github.com/mailhost/mailhost/mailstore"
)

// splitMin is the smallest list fetched in two halves at once.
const splitMin = 2000

// fetchList fetches one page of a list whose items are in ascending id
// order and only ever appended (new ids are larger than all before).
//
// A large list costs the store about 5 µs an item, nearly all JSON
// decoding, on one core. When there is more than one core, fetchList asks
// for the two halves at once, overlapping by one item: A = [off, off+h]
// and B = [off+h, ...], in two read transactions. Their union is exactly
// B's snapshot when A's last item is B's first: items are only appended
// after the end or deleted, so if no item before position h changed
// between the snapshots, A[:h] equals B's first h items; if one did, the
// item at position h differs and the list is fetched again in one call.
func fetchList[T any](fetch func(mailstore.Page) ([]T, int, error), id func(T) int64, p mailstore.Page) ([]T, int, error) {
	if runtime.GOMAXPROCS(0) < 2 || (p.Limit > 0 && p.Limit < splitMin) {
		return fetch(p)
	}
	_, total, err := fetch(mailstore.Page{Limit: 1})
	if err != nil {
		return nil, 0, err
	}
	n := total - p.Offset
	if p.Limit > 0 {
		n = min(n, p.Limit)
	}
	if n < splitMin {
		return fetch(p)
	}
	h := n / 2
	type half struct {
		items []T
		total int
		err   error
	}
	ch := make(chan half, 1)
	go func() {
		items, t, err := fetch(mailstore.Page{Offset: p.Offset, Limit: h + 1})
		ch <- half{items, t, err}
	}()
	bp := mailstore.Page{Offset: p.Offset + h}
	if p.Limit > 0 {
		bp.Limit = n - h
	}
	b, btotal, err := fetch(bp)
	a := <-ch
	if err != nil {
		return nil, 0, err
	}
	if a.err != nil {
		return nil, 0, a.err
	}
	if len(a.items) != h+1 || len(b) == 0 || id(a.items[h]) != id(b[0]) {
		return fetch(p) // the list changed between the two snapshots
	}
	return append(a.items[:h:h], b...), btotal, nil
}
