package git

import (
	"context"
	"os/exec"
	"strings"

	"github.com/cline-mcp/cline-mcp/sandbox"
)

// DoctorCheck is doctor's line on git: found on PATH and answering `git --version`.
func DoctorCheck(ctx context.Context) sandbox.Check {
	gp, err := exec.LookPath("git")
	if err != nil {
		return sandbox.Check{Name: "git", Detail: "git is not on PATH", Fix: "install git (apply_cline_edits and ask_cline_workspace need it)"}
	}
	b, err := exec.CommandContext(ctx, gp, "--version").Output()
	if err != nil {
		return sandbox.Check{Name: "git", Detail: err.Error(), Fix: "reinstall git"}
	}
	return sandbox.Check{Name: "git", OK: true, Detail: strings.TrimSpace(string(b))}
}
