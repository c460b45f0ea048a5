package worker

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/pkg/runtime"
)

// KillFunc stops everything of a pod found in the runtime.
type KillFunc func(ctx context.Context, p *runtime.Pod) error

// Killer stops pods that have no worker: leftovers from before a restart or
// pods whose source no longer lists them. Each kill runs on its own
// goroutine, so one pod with a long grace period never delays another, and a
// pod already being killed is not killed twice.
type Killer struct {
	ctx  context.Context
	kill KillFunc
	wg   sync.WaitGroup

	mu       sync.Mutex
	inFlight map[types.UID]struct{}
}

// NewKiller returns a Killer whose kills are cancelled when ctx is done.
func NewKiller(ctx context.Context, kill KillFunc) *Killer {
	return &Killer{ctx: ctx, kill: kill, inFlight: map[types.UID]struct{}{}}
}

// Kill starts stopping p unless that is already under way. It returns at once.
func (k *Killer) Kill(p *runtime.Pod) {
	k.mu.Lock()
	if _, busy := k.inFlight[p.UID]; busy {
		k.mu.Unlock()
		return
	}
	k.inFlight[p.UID] = struct{}{}
	k.mu.Unlock()

	k.wg.Add(1)
	go func() {
		defer k.wg.Done()
		defer func() {
			k.mu.Lock()
			delete(k.inFlight, p.UID)
			k.mu.Unlock()
		}()
		if err := k.kill(k.ctx, p); err != nil {
			klog.ErrorS(err, "Kill leftover pod", "pod", klog.KRef(p.Namespace, p.Name), "uid", p.UID)
		}
	}()
}

// Killing reports whether a kill of uid is under way.
func (k *Killer) Killing(uid types.UID) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	_, ok := k.inFlight[uid]
	return ok
}

// Wait blocks until every kill started has returned.
func (k *Killer) Wait() { k.wg.Wait() }
