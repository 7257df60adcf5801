package redis

// The dead-letter streams: where the write-behind moves an entry of an event stream that it cannot
// write (not an event it knows, or refused by the record time after time), with the stream, the
// entry's id and the reason beside the entry's own fields. Each is in the hash slot of its stream.

// DeadLetters is the dead-letter stream of the concert's event stream.
func (c ConcertKeys) DeadLetters() string { return c.base + "dead" }

// DeadLetters is the dead-letter stream of a line shard's event stream.
func (s ShardKeys) DeadLetters() string { return s.base + "dead" }

// DeadLetters is the dead-letter stream of the wallet shard's event stream.
func (w WalletKeys) DeadLetters() string { return w.base + "dead" }
