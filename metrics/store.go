package metrics

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mailhost/mailhost/mailstore"
)

// Store is what the store's series ask at each scrape; both stores
// satisfy it. Each call is cheap: see mailstore.Queue's QueueStats.
type Store interface {
	QueueStats(ctx context.Context) (mailstore.QueueStats, error)
	StoreSize(ctx context.Context) (mailstore.StoreSize, error)
}

// scrapeTimeout bounds the store's answers to one scrape.
const scrapeTimeout = 5 * time.Second

// WatchStore adds the series that ask st at scrape time: the outbound
// queue's size and oldest entry, the store's size and free pages. now is
// the clock of the oldest entry's age (nil: time.Now); a failed question
// is logged to log and its series left out of that scrape.
func (s *Set) WatchStore(st Store, now func() time.Time, log *slog.Logger) {
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s.reg.MustRegister(&storeCollector{st: st, now: now, log: log})
}

var (
	descQueueEntries = prometheus.NewDesc("mailhost_outbound_queue_entries",
		"Entries in the outbound queue (one per message and destination domain), held ones included.", nil, nil)
	descQueueHeld = prometheus.NewDesc("mailhost_outbound_queue_held_entries",
		"Entries of the outbound queue held for their domain's transfer cap.", nil, nil)
	descQueueOldest = prometheus.NewDesc("mailhost_outbound_queue_oldest_age_seconds",
		"Age of the oldest entry of the outbound queue; 0 when it is empty.", nil, nil)
	descStoreSize = prometheus.NewDesc("mailhost_store_size_bytes",
		"Size of the store: the bbolt file, or the PostgreSQL schema's tables with their indexes.", nil, nil)
	descStoreFreePages = prometheus.NewDesc("mailhost_store_free_pages",
		"Pages of the bbolt file free for reuse (not served with PostgreSQL).", nil, nil)
	descStoreFreeBytes = prometheus.NewDesc("mailhost_store_free_bytes",
		"Bytes of the bbolt file free for reuse (not served with PostgreSQL).", nil, nil)
)

// storeCollector asks the store at each scrape, rather than keeping
// gauges the queue's writers would have to update: entries are added by
// every delivery that relays, on every node of a shared store.
type storeCollector struct {
	st  Store
	now func() time.Time
	log *slog.Logger
}

func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descQueueEntries, descQueueHeld, descQueueOldest, descStoreSize, descStoreFreePages, descStoreFreeBytes} {
		ch <- d
	}
}

func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	if q, err := c.st.QueueStats(ctx); err != nil {
		c.log.Error("metrics: queue stats", "err", err)
	} else {
		age := 0.0
		if !q.Oldest.IsZero() {
			age = max(c.now().Sub(q.Oldest).Seconds(), 0)
		}
		ch <- prometheus.MustNewConstMetric(descQueueEntries, prometheus.GaugeValue, float64(q.Entries))
		ch <- prometheus.MustNewConstMetric(descQueueHeld, prometheus.GaugeValue, float64(q.Held))
		ch <- prometheus.MustNewConstMetric(descQueueOldest, prometheus.GaugeValue, age)
	}
	if sz, err := c.st.StoreSize(ctx); err != nil {
		c.log.Error("metrics: store size", "err", err)
	} else {
		ch <- prometheus.MustNewConstMetric(descStoreSize, prometheus.GaugeValue, float64(sz.Bytes))
		if sz.FreePages >= 0 {
			ch <- prometheus.MustNewConstMetric(descStoreFreePages, prometheus.GaugeValue, float64(sz.FreePages))
			ch <- prometheus.MustNewConstMetric(descStoreFreeBytes, prometheus.GaugeValue, float64(sz.FreeBytes))
		}
	}
}
