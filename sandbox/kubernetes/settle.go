package kubernetes

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/cline-mcp/cline-mcp/sandbox"
	"github.com/cline-mcp/cline-mcp/sandbox/egress"
)

// settleTimeout bounds one settle of a kept pod's egress grant (an exec into its sidecar).
const settleTimeout = 15 * time.Second

// sidecarSettle is cline-mcp-egress sidecar-settle's line (its SidecarSettle): the credential
// the sidecar lends from now on, null for none.
type sidecarSettle struct {
	Credential *egress.Credential `json:"credential"`
}

// sidecarSettled is the sidecar's answer (its SidecarSettled).
type sidecarSettled struct {
	Summary *egress.Summary `json:"summary"`
	Error   string          `json:"error"`
}

// podSettler settles the egress grant of a kept pod's sidecar between two turns of its session.
type podSettler struct {
	e    *Executor
	pod  string
	line *sidecarLine // the grant's attach, kept (nil: settles go by exec)
}

// Settle implements sandbox.Settler.
func (s podSettler) Settle(ctx context.Context, cred *sandbox.Credential) (*sandbox.EgressReport, error) {
	return s.e.settleSidecar(ctx, s.pod, s.line, cred)
}

// settlerFor is the sandbox.Settler of pod, a pod whose run has a credential in its egress
// sidecar (Spec.Live); line is the grant's kept attach, if any.
func (e *Executor) settlerFor(pod string, line *sidecarLine) sandbox.Settler {
	return podSettler{e: e, pod: pod, line: line}
}

// settleSidecar settles the run's grant in pod's sidecar (a line over the grant's kept attach,
// else an exec of cline-mcp-egress sidecar-settle): it returns what the sidecar's proxy refused
// and let through since the grant or the last settle (nil when nothing), and from then on the
// proxy lends c (its fresh allowance included) or, with c nil, no credential at all. c goes on the
// sidecar's stdin only, never in a command. It runs to its own timeout even when ctx is
// cancelled: a half-done settle would leave the pod lending a key the caller thinks it took back.
//
// The grant's upstream cannot change in a settle: the pod's NetworkPolicy, the sidecar's pinned
// addresses and its allow-list name the upstream of the first grant. The sidecar compares c's
// upstream (host and port) with it and refuses the settle, without settling anything, when they
// differ, so the caller starts a pod for the new upstream instead of running a turn whose every
// provider request would be refused.
func (e *Executor) settleSidecar(ctx context.Context, pod string, line *sidecarLine, c *sandbox.Credential) (*sandbox.EgressReport, error) {
	var req sidecarSettle
	if c != nil {
		ec := egressCredential(c)
		req.Credential = &ec
	}
	text, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	var answer []byte
	if line.usable() {
		// A line that fails now may or may not have been acted on: no second try by exec.
		if answer, err = line.ask(text, settleTimeout); err != nil {
			return nil, fmt.Errorf("kubernetes egress sidecar settle of pod %s: %w", pod, err)
		}
	} else if answer, err = e.execSettle(ctx, pod, text); err != nil {
		return nil, err
	}
	rep, err := settledReport(answer)
	if err != nil {
		return nil, fmt.Errorf("kubernetes egress sidecar settle of pod %s: %w", pod, err)
	}
	return rep, nil
}

// execSettle settles by an exec of cline-mcp-egress sidecar-settle, the request on its stdin.
func (e *Executor) execSettle(ctx context.Context, pod string, text []byte) ([]byte, error) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	var out, errOut bytes.Buffer
	opts := &corev1.PodExecOptions{Container: sidecarName, Command: []string{e.cfg.Egress, "sidecar-settle", "-dir", sidecarDir},
		Stdin: true, Stdout: true, Stderr: true}
	so := remotecommand.StreamOptions{Stdin: bytes.NewReader(append(text, '\n')), Stdout: &out, Stderr: &errOut}
	if err := e.stream(sctx, pod, "exec", opts, so); err != nil {
		if msg := strings.TrimSpace(errOut.String()); msg != "" {
			err = fmt.Errorf("%w (%s)", err, msg)
		}
		return nil, e.apiError("create pods/exec", fmt.Errorf("egress sidecar settle of pod %s: %w", pod, err))
	}
	return out.Bytes(), nil
}

// settledReport reads the sidecar's answer to a settle.
func settledReport(answer []byte) (*sandbox.EgressReport, error) {
	var ans sidecarSettled
	if err := json.Unmarshal(answer, &ans); err != nil {
		return nil, fmt.Errorf("unreadable answer %q", answer[:min(len(answer), 200)])
	}
	switch {
	case ans.Error != "":
		return nil, errors.New(ans.Error)
	case ans.Summary == nil:
		return nil, errors.New("the answer holds no summary")
	}
	return egressReport(*ans.Summary), nil
}

// egressReport is what a summary of a sidecar's proxy says of the run: its refusals, its answers
// and their price (nil when there is nothing to say). What it allowed is the provider alone (the
// grant names nothing else), so Allowed stays empty.
func egressReport(sum egress.Summary) *sandbox.EgressReport {
	rep := &sandbox.EgressReport{Answers: sum.Answers, SpentUSD: sum.SpentUSD}
	for _, c := range sum.Refused {
		rep.Refused = append(rep.Refused, sandbox.Refusal{Target: c.Target, Count: c.Count, Reason: c.Reason, Budget: c.Budget})
	}
	if len(rep.Refused) == 0 && rep.Answers == 0 && rep.SpentUSD == 0 {
		return nil
	}
	return rep
}
