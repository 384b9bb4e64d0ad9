package redistest

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Pipelines records the size of every pipeline a client sends, by the
// address of the node it went to: each is one round trip to that node.
type Pipelines struct {
	mu    sync.Mutex
	sizes map[string][]int
}

// CountPipelines starts recording rdb's pipelines. On a cluster client it
// hooks every node client, which is where the per-node pipelines go.
func CountPipelines(rdb redis.UniversalClient) *Pipelines {
	p := &Pipelines{sizes: map[string][]int{}}
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		cc.OnNewNode(func(node *redis.Client) { node.AddHook(pipelineHook{p, node.Options().Addr}) })
		return p
	}
	if c, ok := rdb.(*redis.Client); ok {
		c.AddHook(pipelineHook{p, c.Options().Addr})
	}
	return p
}

// Take returns the sizes recorded since the last Take, by node address.
func (p *Pipelines) Take() map[string][]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.sizes
	p.sizes = map[string][]int{}
	return s
}

// Count is how many pipelines were recorded since the last Take.
func (p *Pipelines) Count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, s := range p.sizes {
		n += len(s)
	}
	return n
}

type pipelineHook struct {
	p    *Pipelines
	addr string
}

func (pipelineHook) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (pipelineHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h pipelineHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.p.mu.Lock()
		h.p.sizes[h.addr] = append(h.p.sizes[h.addr], len(cmds))
		h.p.mu.Unlock()
		return next(ctx, cmds)
	}
}
