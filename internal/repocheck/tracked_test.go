package repocheck

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// maxTrackedSize is the largest file the repository may track: a build output or a data set
// over it belongs in a release or a cache, not in every clone.
const maxTrackedSize = 1 << 20

// executableScripts are the only tracked files that may carry the executable bit. A new script
// goes here (and must not be a binary).
var executableScripts = map[string]bool{
	".ci/run":          true,
	"compose/smoke.sh": true,
	"images/base.sh":   true,
	// the Kubernetes test cluster: prepare, up, down (internal/testcluster)
	"internal/testcluster/scripts/cluster.sh": true,
}

// headLen is how much of each file the binary check reads: enough for the PE header offset.
const headLen = 4096

// trackedProblems lists what is wrong with the files in the index of the repository at dir:
// the blobs git would commit, not the work tree.
func trackedProblems(dir string) ([]string, error) {
	ls := exec.Command("git", "ls-files", "-z", "--stage")
	ls.Dir = dir
	out, err := ls.Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files: %w", err)
	}
	type entry struct{ mode, hash, path string }
	var entries []entry
	var hashes bytes.Buffer
	for _, rec := range strings.Split(string(out), "\x00") {
		meta, path, ok := strings.Cut(rec, "\t")
		f := strings.Fields(meta)
		if !ok || len(f) != 3 || (f[0] != "100644" && f[0] != "100755") {
			continue // empty tail, symlinks (120000) and submodules (160000) hold no file content
		}
		entries = append(entries, entry{f[0], f[1], path})
		hashes.WriteString(f[1] + "\n")
	}
	heads, sizes, err := readBlobs(dir, &hashes, len(entries))
	if err != nil {
		return nil, err
	}
	var problems []string
	for i, e := range entries {
		if sizes[i] > maxTrackedSize {
			problems = append(problems, fmt.Sprintf("%s: %d bytes, over the 1 MiB limit for tracked files", e.path, sizes[i]))
		}
		if kind := executableFormat(heads[i]); kind != "" {
			problems = append(problems, fmt.Sprintf("%s: a binary executable (%s)", e.path, kind))
		}
		if e.mode == "100755" && !executableScripts[e.path] {
			problems = append(problems, fmt.Sprintf("%s: executable bit set, but not in executableScripts (internal/repocheck/tracked_test.go)", e.path))
		}
	}
	sort.Strings(problems)
	return problems, nil
}

// readBlobs reads n blobs named in hashes with one git cat-file: the first headLen bytes and
// the size of each.
func readBlobs(dir string, hashes io.Reader, n int) ([][]byte, []int64, error) {
	cat := exec.Command("git", "cat-file", "--batch")
	cat.Dir = dir
	cat.Stdin = hashes
	stdout, err := cat.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cat.Start(); err != nil {
		return nil, nil, err
	}
	r := bufio.NewReaderSize(stdout, 1<<16)
	heads, sizes := make([][]byte, n), make([]int64, n)
	for i := 0; i < n; i++ {
		line, err := r.ReadString('\n')
		f := strings.Fields(line)
		if err != nil || len(f) != 3 || f[1] != "blob" {
			cat.Wait()
			return nil, nil, fmt.Errorf("git cat-file: unexpected %q (%v)", line, err)
		}
		size, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			cat.Wait()
			return nil, nil, err
		}
		head := make([]byte, min(size, headLen))
		if _, err := io.ReadFull(r, head); err != nil {
			cat.Wait()
			return nil, nil, err
		}
		if _, err := io.CopyN(io.Discard, r, size-int64(len(head))+1); err != nil { // +1: the newline
			cat.Wait()
			return nil, nil, err
		}
		heads[i], sizes[i] = head, size
	}
	return heads, sizes, cat.Wait()
}

// executableFormat names the executable format whose magic bytes head starts with, or "".
func executableFormat(head []byte) string {
	magic := func(b ...byte) bool { return bytes.HasPrefix(head, b) }
	switch {
	case magic(0x7f, 'E', 'L', 'F'):
		return "ELF"
	case magic(0xfe, 0xed, 0xfa, 0xce), magic(0xfe, 0xed, 0xfa, 0xcf),
		magic(0xce, 0xfa, 0xed, 0xfe), magic(0xcf, 0xfa, 0xed, 0xfe):
		return "Mach-O"
	case magic(0xca, 0xfe, 0xba, 0xbe), magic(0xca, 0xfe, 0xba, 0xbf):
		return "Mach-O universal"
	case magic('M', 'Z') && len(head) >= 0x40:
		// PE: the DOS header's e_lfanew points at "PE\0\0"
		off := int(binary.LittleEndian.Uint32(head[0x3c:]))
		if off+4 <= len(head) && bytes.Equal(head[off:off+4], []byte("PE\x00\x00")) {
			return "PE"
		}
	}
	return ""
}

// TestTrackedFiles: this repository tracks no file over 1 MiB, no binary executable, and no
// executable file but the allow-listed scripts.
func TestTrackedFiles(t *testing.T) {
	root := repoRoot(t)
	problems, err := trackedProblems(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
	for path := range executableScripts {
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(path))); err != nil {
			t.Errorf("executableScripts names %s, which does not exist", path)
		}
	}
}

// TestTrackedFilesGuardRefuses: in a scratch repository, each kind of forbidden file is
// reported, by the index (what git commits), and nothing else is.
func TestTrackedFilesGuardRefuses(t *testing.T) {
	dir := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	pe := make([]byte, 0x200)
	copy(pe, "MZ")
	binary.LittleEndian.PutUint32(pe[0x3c:], 0x80)
	copy(pe[0x80:], "PE\x00\x00")
	files := map[string][]byte{
		"ok.txt":          []byte("text\n"),
		"one-mib.txt":     bytes.Repeat([]byte("a"), maxTrackedSize),
		"big.txt":         bytes.Repeat([]byte("a"), maxTrackedSize+1),
		"bin/tool":        append([]byte{0x7f, 'E', 'L', 'F', 2, 1, 1}, make([]byte, 60)...),
		"bin/tool-darwin": append([]byte{0xcf, 0xfa, 0xed, 0xfe}, make([]byte, 60)...),
		"bin/tool.exe":    pe,
		"mz.txt":          []byte("MZ is how this text file begins, and it is no program at all; " + strings.Repeat("x", 80)),
		"hack.sh":         []byte("#!/bin/sh\necho hi\n"),
		".ci/run":         []byte("#!/usr/bin/env bash\n"),
	}
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, content, 0o644); err != nil {
			t.Fatal(err)
		}
		git("add", "--", name)
	}
	git("update-index", "--chmod=+x", "--", "hack.sh", ".ci/run", "bin/tool")
	// the index, not the work tree, is what counts: a deleted file is still tracked
	if err := os.Remove(filepath.Join(dir, "big.txt")); err != nil {
		t.Fatal(err)
	}
	got, err := trackedProblems(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"big.txt: 1048577 bytes, over the 1 MiB limit",
		"bin/tool-darwin: a binary executable (Mach-O)",
		"bin/tool.exe: a binary executable (PE)",
		"bin/tool: a binary executable (ELF)",
		"bin/tool: executable bit set",
		"hack.sh: executable bit set",
	}
	if len(got) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("problem %d: got %q, want %q…", i, got[i], want[i])
		}
	}
}
