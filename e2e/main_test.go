//go:build e2e

package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/testcontainers/testcontainers-go"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// fakeImage is the fake CLI image this suite builds with testcontainers-go. Its own tag keeps
// its containers apart from those of other packages' tests running at the same time.
const fakeRepo = "cline-mcp/fake-cline"

var (
	fakeTag   = mcpsession.TestTag("e2e")
	fakeImage = fakeRepo + ":" + fakeTag
)

var (
	dockerErr error  // why the Docker tests and column cannot run here (never set under CI=true)
	suiteRoot string // parent of every world; checked for leftovers at the end
	suiteTag  string // E2E_SUITE=<suiteTag> is in every server's environment
	suiteT0   time.Time
)

// The suite's setup and end-of-suite sweep run in the package's one TestMain (harness_test.go),
// after it built the binaries (bins).
func init() {
	beforeAll = append(beforeAll, setupSuite)
	afterAll = append(afterAll, endSuite)
}

func setupSuite() error {
	suiteT0 = time.Now()
	var err error
	suiteRoot, err = os.MkdirTemp("", "cline-mcp-e2e-")
	if err != nil {
		return err
	}
	suiteTag = randHex(8)
	return setupDocker()
}

func endSuite(code int) error {
	defer func() {
		fmt.Fprintf(os.Stderr, "e2e suite took %v\n", time.Since(suiteT0).Round(100*time.Millisecond))
	}()
	if err := suiteLeaks(); err != nil {
		return fmt.Errorf("\n!!! e2e suite FAILED: %w\n", err)
	}
	if code == 0 {
		_ = os.RemoveAll(suiteRoot)
	} else {
		fmt.Fprintf(os.Stderr, "e2e: worlds kept for inspection in %s\n", suiteRoot)
	}
	return nil
}

// setupDocker builds the fake image with testcontainers-go, or records why Docker is missing.
// Under CI=true a missing engine is an error: the Docker column must not pass by skipping.
func setupDocker() error {
	if err := mcpsession.DockerAvailable(); err != nil {
		if os.Getenv("CI") == "true" {
			return fmt.Errorf("CI=true but no Docker engine answers (the Docker half of the e2e matrix cannot run): %w", err)
		}
		dockerErr = err
		fmt.Fprintf(os.Stderr, "\n!!! e2e: the Docker column will be SKIPPED: no Docker engine: %v\n\n", err)
		return nil
	}
	if err := buildFakeImage(); err != nil {
		return fmt.Errorf("build %s with testcontainers-go: %w", fakeImage, err)
	}
	return nil
}

// buildFakeImage builds images/fake-cline/Dockerfile plus the static fake into fakeImage through
// testcontainers-go's FromDockerfile (the classic builder; no registry is contacted: FROM scratch).
func buildFakeImage() error {
	// The reaper (ryuk) image cannot be pulled here; the suite removes what it creates itself.
	os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	ctxDir, err := os.MkdirTemp("", "cline-mcp-e2e-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(ctxDir)
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	if err := copyFile(filepath.Join(root, "images", "fake-cline", "Dockerfile"), filepath.Join(ctxDir, "Dockerfile"), 0o644); err != nil {
		return err
	}
	if err := copyFile(bins.ImageFake, filepath.Join(ctxDir, "fake-cline"), 0o755); err != nil {
		return err
	}
	provider, err := testcontainers.NewDockerProvider()
	if err != nil {
		return err
	}
	defer provider.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var log strings.Builder
	tag, err := provider.BuildImage(ctx, &testcontainers.ContainerRequest{FromDockerfile: testcontainers.FromDockerfile{
		Context:        ctxDir,
		Repo:           fakeRepo,
		Tag:            fakeTag,
		KeepImage:      true,
		BuildLogWriter: &log,
	}})
	if err != nil {
		return fmt.Errorf("%w\n%s", err, log.String())
	}
	if tag != fakeImage {
		return fmt.Errorf("built %s, want %s", tag, fakeImage)
	}
	return nil
}

// suiteLeaks is the end-of-suite sweep: whatever a test forgot, across all worlds.
func suiteLeaks() error {
	var errs []error
	if pids := mcpsession.ProcsWithEnv("E2E_SUITE=" + suiteTag); len(pids) > 0 {
		errs = append(errs, fmt.Errorf("leak: %d process(es) started by the suite's servers still run: %v", len(pids), pids))
	}
	if dockerErr == nil {
		ids, err := mcpsession.Containers("label=cline-mcp.run", "ancestor="+fakeImage)
		if err != nil {
			errs = append(errs, err)
		}
		// ancestor= matches by image ID, and every checkout builds a byte-identical fake image:
		// only containers started by this suite's servers (they carry E2E_SUITE) are ours.
		var ours []string
		for _, id := range ids {
			if containerHasEnv(id, "E2E_SUITE="+suiteTag) {
				ours = append(ours, id)
			}
		}
		if len(ours) > 0 {
			errs = append(errs, fmt.Errorf("leak: %d container(s) labelled cline-mcp.run from %s left: %v", len(ours), fakeImage, ours))
		}
	}
	for _, pat := range []string{"*/tmp/cline-mcp-call-*", "*/tmp/cline-mcp-worktrees/*"} {
		if m, _ := filepath.Glob(filepath.Join(suiteRoot, pat)); len(m) > 0 {
			errs = append(errs, fmt.Errorf("leak: %v left in the servers' TMPDIRs", m))
		}
	}
	for _, repo := range allRepos() {
		if wts, err := worktrees(repo); err == nil && len(wts) > 1 {
			errs = append(errs, fmt.Errorf("leak: worktrees left in %s: %v", repo, wts[1:]))
		}
	}
	return errors.Join(errs...)
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
