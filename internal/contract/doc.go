// Package contract is ticketrush's black-box contract suite: it builds cmd/ticketrush, starts it as
// `serve` with nothing but the required environment (every timeout, rate limit and role at its
// production default), and checks docs/api.md (the HTTP contract, v3) section by section over HTTP
// only. Every check names the contract sentence it holds the service to, so a failure reads as the
// sentence that was broken and what the service answered instead.
//
// It has no production code: this file only documents the package; the suite is in the _test files.
// docs/contract.md says how to run it.
package contract
