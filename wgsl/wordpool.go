package wgsl

import (
	"sync"

	"github.com/fp8lab/fp8lab/internal/hugemem"
)

// wordPool keeps the word buffers of released packed caches
// ([SimPackedCache.Release]) for the next [PackSimCache] whose cache fits
// in one: a needle experiment packs a cache of tens of MB per haystack,
// and a fresh buffer costs its page faults (system time on every core that
// first touches it) where a reused one costs nothing. It holds at most
// maxPooledWords words in all (a released buffer beyond that is left to
// the collector); Runner.Close empties it, so a long-running lab holds
// nothing of it between runs.
var packPool = wordPool{max: maxPooledWords}

// maxPooledWords bounds what packPool keeps: 1 GiB, about two groups of a
// default needle run's packed caches at 128k tokens.
const maxPooledWords = 1 << 28

type wordPool struct {
	mu    sync.Mutex
	free  [][]uint32
	words int // the capacity held in free
	max   int
}

// get returns an empty slice with capacity at least n: the smallest pooled
// buffer that holds n words, else a new one. Its words are not zeroed.
func (p *wordPool) get(n int) []uint32 {
	p.mu.Lock()
	best := -1
	for i, b := range p.free {
		if cap(b) >= n && (best < 0 || cap(b) < cap(p.free[best])) {
			best = i
		}
	}
	if best >= 0 {
		b := p.free[best]
		p.free[best] = p.free[len(p.free)-1]
		p.free = p.free[:len(p.free)-1]
		p.words -= cap(b)
		p.mu.Unlock()
		return b[:0]
	}
	p.mu.Unlock()
	return hugemem.Advise(make([]uint32, 0, n))
}

// put keeps b for a later get, unless the pool is full.
func (p *wordPool) put(b []uint32) {
	if cap(b) == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.words+cap(b) > p.max {
		return
	}
	p.free = append(p.free, b[:0])
	p.words += cap(b)
}

// drain forgets every pooled buffer (left to the collector).
func (p *wordPool) drain() {
	p.mu.Lock()
	p.free, p.words = nil, 0
	p.mu.Unlock()
}
