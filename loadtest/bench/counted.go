package main

import (
	"context"
	"time"

	"github.com/redis/rueidis"
)

// counted is a client that counts every command sent through it (a command's words are read before
// it is sent: rueidis recycles them after).
type counted struct {
	rueidis.Client
	sent *sentCommands
}

func completed(cmds []rueidis.Completed) [][]string {
	out := make([][]string, len(cmds))
	for i := range cmds {
		out[i] = cmds[i].Commands()
	}
	return out
}

func (c counted) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c.sent.add(cmd.Commands())
	return c.Client.Do(ctx, cmd)
}

func (c counted) DoMulti(ctx context.Context, multi ...rueidis.Completed) []rueidis.RedisResult {
	c.sent.add(completed(multi)...)
	return c.Client.DoMulti(ctx, multi...)
}

func (c counted) DoCache(ctx context.Context, cmd rueidis.Cacheable, ttl time.Duration) rueidis.RedisResult {
	c.sent.add(cmd.Commands())
	return c.Client.DoCache(ctx, cmd, ttl)
}

func (c counted) DoMultiCache(ctx context.Context, multi ...rueidis.CacheableTTL) []rueidis.RedisResult {
	for i := range multi {
		c.sent.add(multi[i].Cmd.Commands())
	}
	return c.Client.DoMultiCache(ctx, multi...)
}

func (c counted) DoStream(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResultStream {
	c.sent.add(cmd.Commands())
	return c.Client.DoStream(ctx, cmd)
}

func (c counted) DoMultiStream(ctx context.Context, multi ...rueidis.Completed) rueidis.MultiRedisResultStream {
	c.sent.add(completed(multi)...)
	return c.Client.DoMultiStream(ctx, multi...)
}

func (c counted) Receive(ctx context.Context, subscribe rueidis.Completed, fn func(rueidis.PubSubMessage)) error {
	c.sent.add(subscribe.Commands())
	return c.Client.Receive(ctx, subscribe, fn)
}

func (c counted) Dedicated(fn func(rueidis.DedicatedClient) error) error {
	return c.Client.Dedicated(func(d rueidis.DedicatedClient) error { return fn(countedDedicated{d, c.sent}) })
}

func (c counted) Dedicate() (rueidis.DedicatedClient, func()) {
	d, cancel := c.Client.Dedicate()
	return countedDedicated{d, c.sent}, cancel
}

func (c counted) Nodes() map[string]rueidis.Client {
	nodes := c.Client.Nodes()
	for addr, n := range nodes {
		nodes[addr] = counted{n, c.sent}
	}
	return nodes
}

// countedDedicated is counted's dedicated connection.
type countedDedicated struct {
	rueidis.DedicatedClient
	sent *sentCommands
}

func (c countedDedicated) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c.sent.add(cmd.Commands())
	return c.DedicatedClient.Do(ctx, cmd)
}

func (c countedDedicated) DoMulti(ctx context.Context, multi ...rueidis.Completed) []rueidis.RedisResult {
	c.sent.add(completed(multi)...)
	return c.DedicatedClient.DoMulti(ctx, multi...)
}

func (c countedDedicated) Receive(ctx context.Context, subscribe rueidis.Completed, fn func(rueidis.PubSubMessage)) error {
	c.sent.add(subscribe.Commands())
	return c.DedicatedClient.Receive(ctx, subscribe, fn)
}
