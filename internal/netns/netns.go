// Package netns runs test code in a private network namespace whose only interface is loopback,
// so real clients under test (Claude Code, the Cline CLI) and the fakes they talk to can use
// 127.0.0.1 while nothing they do can leave the machine. It needs root (CAP_SYS_ADMIN) and
// Linux; elsewhere Run reports errors.ErrUnsupported. For tests only.
package netns
