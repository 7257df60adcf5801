// Package contract is ticketrush's black-box contract suite: it builds cmd/ticketrush, starts it as
// `serve` with nothing but the required environment (every timeout, rate limit and role at its
// production default), and checks the HTTP contract (docs/api.md and openapi.yaml, the pages clients are
// written against) section by section, over HTTP only. Every check names
// the contract sentence it holds the service to, so a failure reads as the sentence that was broken and
// what the service answered instead.
//
// The package has no code outside its tests; docs/contract.md says how to run it and read a failure.
package contract
