package runquery

// multiMatcher finds which of a set of patterns occur in a text in one
// pass over it (Aho and Corasick's automaton over bytes): the cost of a
// search is the text's length plus the matches, whatever the number of
// patterns, so that a query of many words costs no more per run than one.
type multiMatcher struct {
	nodes    []acNode
	patterns int
}

type acNode struct {
	next []acEdge // sorted by byte
	fail int32
	out  []int32 // patterns ending here, and at the nodes of its fail chain (dict links folded in)
}

type acEdge struct {
	b  byte
	to int32
}

func (n *acNode) child(b byte) int32 {
	lo, hi := 0, len(n.next)
	for lo < hi {
		m := (lo + hi) / 2
		switch {
		case n.next[m].b == b:
			return n.next[m].to
		case n.next[m].b < b:
			lo = m + 1
		default:
			hi = m
		}
	}
	return -1
}

// newMultiMatcher builds the automaton of patterns (their indices are the
// pattern ids); an empty pattern occurs in every text.
func newMultiMatcher(patterns []string) *multiMatcher {
	m := &multiMatcher{nodes: []acNode{{}}, patterns: len(patterns)}
	for id, p := range patterns {
		cur := int32(0)
		for i := 0; i < len(p); i++ {
			nx := m.nodes[cur].child(p[i])
			if nx < 0 {
				nx = int32(len(m.nodes))
				m.nodes = append(m.nodes, acNode{})
				e := &m.nodes[cur].next
				j := 0
				for j < len(*e) && (*e)[j].b < p[i] {
					j++
				}
				*e = append(*e, acEdge{})
				copy((*e)[j+1:], (*e)[j:])
				(*e)[j] = acEdge{p[i], nx}
			}
			cur = nx
		}
		m.nodes[cur].out = append(m.nodes[cur].out, int32(id))
	}
	// Fail links, breadth first; each node's outputs take its fail node's.
	queue := []int32{}
	for _, e := range m.nodes[0].next {
		m.nodes[e.to].fail = 0
		queue = append(queue, e.to)
	}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		for _, e := range m.nodes[u].next {
			f := m.nodes[u].fail
			for {
				if c := m.nodes[f].child(e.b); c >= 0 && c != e.to {
					m.nodes[e.to].fail = c
					break
				}
				if f == 0 {
					m.nodes[e.to].fail = 0
					break
				}
				f = m.nodes[f].fail
			}
			m.nodes[e.to].out = append(m.nodes[e.to].out, m.nodes[m.nodes[e.to].fail].out...)
			queue = append(queue, e.to)
		}
	}
	return m
}

// find returns, by pattern id, whether the pattern occurs in text.
func (m *multiMatcher) find(text string) []bool {
	found := make([]bool, m.patterns)
	left := m.patterns
	for _, id := range m.nodes[0].out { // empty patterns
		if !found[id] {
			found[id], left = true, left-1
		}
	}
	cur := int32(0)
	for i := 0; i < len(text) && left > 0; i++ {
		b := text[i]
		for {
			if c := m.nodes[cur].child(b); c >= 0 {
				cur = c
				break
			}
			if cur == 0 {
				break
			}
			cur = m.nodes[cur].fail
		}
		for _, id := range m.nodes[cur].out {
			if !found[id] {
				found[id], left = true, left-1
			}
		}
	}
	return found
}
