// Package contract holds the contract suite: tests (build tag `contract`, run with
// `make contract`) that drive the built cline-mcp server over stdio against the real Cline CLI
// (npm cline@3.0.65, installed into a cache directory outside the repository) and a scripted
// OpenAI-compatible provider (contract/fakeprovider), on the host inside a private network
// namespace and in Docker with the real image (images/cline), where the provider is reached
// through a relay container with --network none. The suite also re-checks that internal/cmd/fake-cline
// still produces the same event shapes as the real CLI. See README.md for the design; the
// package has no non-test code.
package contract
