package dbtest

import (
	"context"

	"github.com/redis/rueidis"
)

// Watched wraps c so that see is shown every command sent through Do or DoMulti, as its words, before
// it is sent (rueidis recycles a command once it has run). Tests count with it what a component sends.
// see may be called from several goroutines at once.
func Watched(c rueidis.Client, see func(words []string)) rueidis.Client {
	return &watched{Client: c, see: see}
}

type watched struct {
	rueidis.Client
	see func(words []string)
}

func (w *watched) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	w.see(cmd.Commands())
	return w.Client.Do(ctx, cmd)
}

func (w *watched) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	for _, cmd := range cmds {
		w.see(cmd.Commands())
	}
	return w.Client.DoMulti(ctx, cmds...)
}
