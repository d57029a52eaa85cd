package remote

import (
	"container/list"
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"slices"
	"sync"
	"time"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
)

// cacheKey is the SHA-256 of an exact (prepared) input.
type cacheKey [sha256.Size]byte

// inputKey hashes the text and every part (modality, URL, media type), each field length-
// prefixed so that no two different inputs share an encoding.
func inputKey(in classify.Input) cacheKey {
	h := sha256.New()
	writeField(h, in.Text)
	for _, p := range in.Parts {
		_, _ = h.Write([]byte{byte(p.Modality)})
		writeField(h, p.URL)
		writeField(h, p.MIMEType)
	}
	var k cacheKey
	h.Sum(k[:0])
	return k
}

func writeField(h hash.Hash, s string) {
	var n [binary.MaxVarintLen64]byte
	_, _ = h.Write(n[:binary.PutUvarint(n[:], uint64(len(s)))])
	_, _ = h.Write([]byte(s))
}

// cache is a classifier's answer cache: at most max entries, least recently used evicted
// first, each valid for ttl after it was stored. Only valid answers are stored; errors
// never are. A nil *cache is a cache that is off.
type cache struct {
	ttl time.Duration
	max int
	now func() time.Time

	mu    sync.Mutex
	order *list.List // of *cacheEntry, most recently used first
	items map[cacheKey]*list.Element
}

type cacheEntry struct {
	key     cacheKey
	res     classify.Result
	expires time.Time
}

// newCache returns the cache c configures, or nil when c is not positive.
func newCache(c Cache, now func() time.Time) *cache {
	if c.TTL <= 0 || c.MaxEntries <= 0 {
		return nil
	}
	return &cache{ttl: c.TTL, max: c.MaxEntries, now: now, order: list.New(), items: map[cacheKey]*list.Element{}}
}

// get returns a copy of the unexpired answer stored under k.
func (c *cache) get(k cacheKey) (classify.Result, bool) {
	if c == nil {
		return classify.Result{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[k]
	if !ok {
		return classify.Result{}, false
	}
	e := el.Value.(*cacheEntry)
	if !c.now().Before(e.expires) {
		c.order.Remove(el)
		delete(c.items, k)
		return classify.Result{}, false
	}
	c.order.MoveToFront(el)
	return cloneResult(e.res), true
}

// put stores a copy of res under k, evicting the least recently used entries beyond max.
func (c *cache) put(k cacheKey, res classify.Result) {
	if c == nil {
		return
	}
	e := &cacheEntry{key: k, res: cloneResult(res), expires: c.now().Add(c.ttl)}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[k]; ok {
		el.Value = e
		c.order.MoveToFront(el)
		return
	}
	c.items[k] = c.order.PushFront(e)
	for c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.items, last.Value.(*cacheEntry).key)
	}
}

// cloneResult copies res so that neither the caller nor the cache can change the other's.
func cloneResult(res classify.Result) classify.Result {
	return classify.Result{
		Scores:   slices.Clone(res.Scores),
		Refusals: slices.Clone(res.Refusals),
		Answers:  slices.Clone(res.Answers),
		Spans:    slices.Clone(res.Spans),
	}
}
