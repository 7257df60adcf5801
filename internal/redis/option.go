package redis

import (
	"slices"

	"github.com/ticketrush/ticketrush/lua"
)

// Option changes how NewStore builds a Store.
type Option func(*Store)

// WithScript runs src in place of the embedded script name (lua/<name>.lua), under the same name, keys,
// arguments and metrics. It is for a test that plants a bug in a script and shows that its check
// catches it (internal/linearize's TestCheckerRejectsAPlantedBug): the service never passes it. An
// unknown name panics, as lua.Source does.
func WithScript(name, src string) Option {
	if !slices.Contains(lua.Names(), name) {
		panic("redis: no script " + name)
	}
	return func(s *Store) {
		if s.sources == nil {
			s.sources = map[string]string{}
		}
		s.sources[name] = src
	}
}
