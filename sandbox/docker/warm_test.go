package docker

import (
	"testing"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
)

func TestShapeOfIgnoresOnlyWhatGoesInAtTheClaim(t *testing.T) {
	slot := "/tmp/cline-mcp-warm-x-1"
	opts := func(edit func(*container.Config, *container.HostConfig)) client.ContainerCreateOptions {
		cfg := &container.Config{Image: "img", User: "1:1", Labels: map[string]string{LabelRun: "r1", LabelInstance: "i"},
			Entrypoint: []string{"/cli"}, Cmd: []string{"a"}, Env: []string{"A=1"}, WorkingDir: "/w"}
		host := &container.HostConfig{ReadonlyRootfs: true, CapDrop: []string{"ALL"}, NetworkMode: "none", Mounts: []mount.Mount{
			{Type: mount.TypeBind, Source: "/repo", Target: "/repo", ReadOnly: true},
			{Type: mount.TypeBind, Source: slot + "/copy", Target: slot + "/copy"},
		}}
		if edit != nil {
			edit(cfg, host)
		}
		return client.ContainerCreateOptions{Config: cfg, HostConfig: host}
	}
	_, base, ok := shapeOf(opts(nil), slot)
	if !ok {
		t.Fatal("bind mounts: want a shape")
	}
	same := map[string]func(*container.Config, *container.HostConfig){
		"argv, env, dir, run label": func(c *container.Config, _ *container.HostConfig) {
			c.Entrypoint, c.Cmd, c.Env, c.WorkingDir, c.Labels[LabelRun] = []string{"/x"}, nil, []string{"B=2"}, "/v", "r2"
		},
		"another per-call dir in the slot": func(_ *container.Config, h *container.HostConfig) {
			h.Mounts[1].Source, h.Mounts[1].Target = slot+"/other", slot+"/other"
		},
	}
	for name, edit := range same {
		if _, k, _ := shapeOf(opts(edit), slot); k != base {
			t.Errorf("%s: the shape changed", name)
		}
	}
	differ := map[string]func(*container.Config, *container.HostConfig){
		"writable root":            func(_ *container.Config, h *container.HostConfig) { h.ReadonlyRootfs = false },
		"capabilities":             func(_ *container.Config, h *container.HostConfig) { h.CapDrop = nil },
		"network":                  func(_ *container.Config, h *container.HostConfig) { h.NetworkMode = "bridge" },
		"user":                     func(c *container.Config, _ *container.HostConfig) { c.User = "0:0" },
		"another checkout":         func(_ *container.Config, h *container.HostConfig) { h.Mounts[0].Source = "/other" },
		"checkout writable":        func(_ *container.Config, h *container.HostConfig) { h.Mounts[0].ReadOnly = false },
		"read-only dir in slot":    func(_ *container.Config, h *container.HostConfig) { h.Mounts[1].ReadOnly = true },
		"slot dir at another path": func(_ *container.Config, h *container.HostConfig) { h.Mounts[1].Target = "/elsewhere" },
		"a mount outside the slot": func(_ *container.Config, h *container.HostConfig) {
			h.Mounts = append(h.Mounts, mount.Mount{Type: mount.TypeBind, Source: "/tmp/x", Target: "/tmp/x"})
		},
	}
	for name, edit := range differ {
		if _, k, _ := shapeOf(opts(edit), slot); k == base {
			t.Errorf("%s: same shape, want another", name)
		}
	}
	vol := opts(func(_ *container.Config, h *container.HostConfig) { h.Mounts[0].Type = mount.TypeVolume })
	if _, _, ok := shapeOf(vol, slot); ok {
		t.Error("copy mode's volumes: want no shape")
	}
}

// In copy mode a shape holds the kept volumes it mounts read-only, by name, and leaves out the
// call's own volumes in the slot; any other volume (a busy kept volume's stand-in, an overlay of
// a writable tree) has no shape.
func TestShapeOfCopyMode(t *testing.T) {
	slot := "/tmp/cline-mcp-warm-x-1"
	opts := func(ms ...mount.Mount) client.ContainerCreateOptions {
		return client.ContainerCreateOptions{Config: &container.Config{Image: "img", Labels: map[string]string{LabelRun: "r1"}},
			HostConfig: &container.HostConfig{ReadonlyRootfs: true, Mounts: ms}}
	}
	kept := mount.Mount{Type: mount.TypeVolume, Source: keptPrefix + "r0-1", Target: "/repo", ReadOnly: true}
	own := mount.Mount{Type: mount.TypeVolume, Source: "cline-mcp-r1-0", Target: slot + "/copy"}
	_, base, ok := shapeOf(opts(kept, own), slot)
	if !ok || !slotUsed(opts(kept, own).HostConfig.Mounts, slot) {
		t.Fatalf("a kept volume and the call's own in the slot: shape %v, slot used %v", ok, slotUsed(opts(kept, own).HostConfig.Mounts, slot))
	}
	ownElse := own
	ownElse.Source = "" // a warm claim's: no volume of its own
	if _, k, _ := shapeOf(opts(kept, ownElse), slot); k != base {
		t.Error("the call's own volume's name changed the shape")
	}
	keptElse := kept
	keptElse.Source = keptPrefix + "r5-1"
	if _, k, _ := shapeOf(opts(keptElse, own), slot); k == base {
		t.Error("another kept volume: same shape")
	}
	for name, m := range map[string]mount.Mount{
		"a busy kept volume's stand-in": {Type: mount.TypeVolume, Source: "cline-mcp-r1-1", Target: "/repo", ReadOnly: true},
		"a writable tree's overlay":     {Type: mount.TypeVolume, Source: "cline-mcp-r1-1-merged", Target: "/repo"},
		"a writable kept volume":        {Type: mount.TypeVolume, Source: keptPrefix + "r0-1", Target: "/repo"},
	} {
		if _, _, ok := shapeOf(opts(m, own), slot); ok {
			t.Errorf("%s: want no shape", name)
		}
	}
}

func TestCacheDiff(t *testing.T) {
	old := map[string]stamp{"a": {size: 1, mtime: 1, mode: 0o644}, "d": {mode: 0o755 | 1<<31}, "l": {mode: 1 << 27, link: "a"}}
	cur := map[string]stamp{"a": {size: 1, mtime: 1, mode: 0o644}, "d": {mode: 0o755 | 1<<31}, "l": {mode: 1 << 27, link: "a"}}
	if ch, full := diff(old, cur); full || len(ch) != 0 {
		t.Fatalf("unchanged: %v %v", ch, full)
	}
	if _, full := diff(nil, cur); !full {
		t.Fatal("no record: want a full fill")
	}
	edit := func(k string, s stamp) map[string]stamp {
		m := map[string]stamp{}
		for kk, v := range cur {
			m[kk] = v
		}
		if s == (stamp{}) {
			delete(m, k)
		} else {
			m[k] = s
		}
		return m
	}
	for name, c := range map[string]struct {
		cur  map[string]stamp
		full bool
		ch   string
	}{
		"size":        {edit("a", stamp{size: 2, mtime: 1, mode: 0o644}), false, "a"},
		"mtime":       {edit("a", stamp{size: 1, mtime: 2, mode: 0o644}), false, "a"},
		"mode":        {edit("a", stamp{size: 1, mtime: 1, mode: 0o755}), false, "a"},
		"link target": {edit("l", stamp{mode: 1 << 27, link: "b"}), false, "l"},
		"new file":    {edit("n", stamp{size: 1, mode: 0o644}), false, "n"},
		"removed":     {edit("a", stamp{}), true, ""},
		"file to dir": {edit("a", stamp{mode: 0o755 | 1<<31}), true, ""},
	} {
		ch, full := diff(old, c.cur)
		if full != c.full || (!full && (len(ch) != 1 || !ch[c.ch])) {
			t.Errorf("%s: changed %v full %v", name, ch, full)
		}
	}
	racy := map[string]stamp{"a": {size: 1, mtime: 1, mode: 0o644, racy: true}, "d": old["d"], "l": old["l"]}
	if ch, _ := diff(racy, cur); !ch["a"] {
		t.Error("a file recorded within the racy window: want it sent again")
	}
}

// A call whose environment a shell cannot set exactly starts cold (launchScript says no): an
// entry without "=", a name the shell cannot export, a NUL byte.
func TestLaunchScriptRefusesWhatAShellCannotSay(t *testing.T) {
	ok := &container.Config{Env: []string{"A_1=x y", "B="}, WorkingDir: "/w", Entrypoint: []string{"/cli"}, Cmd: []string{"it's"}}
	s, good := launchScript(ok, false)
	want := "export A_1='x y'\nexport B=''\ncd '/w' || exit 126\nexec '/cli' 'it'\"'\"'s' </dev/null\n"
	if !good || s != want {
		t.Fatalf("launchScript = %q, %v; want %q", s, good, want)
	}
	for _, env := range [][]string{{"NOVALUE"}, {"A-B=1"}, {"1A=1"}, {"A=x\x00y"}} {
		if s, good := launchScript(&container.Config{Env: env, Entrypoint: []string{"/cli"}}, true); good {
			t.Errorf("env %q: launchScript = %q, want a refusal", env, s)
		}
	}
}

// The executable is looked up at a warm container's create only where no mount can change it.
func TestFixedPath(t *testing.T) {
	host := &container.HostConfig{
		Mounts: []mount.Mount{{Type: mount.TypeBind, Source: "/src/w", Target: "/w"}},
		Tmpfs:  map[string]string{"/tmp": ""},
	}
	for p, want := range map[string]bool{"/usr/local/bin/cline": true, "/w": false, "/w/bin/cli": false, "/tmp/x": false, "/wx": true, "": false} {
		if got := fixedPath(p, host); got != want {
			t.Errorf("fixedPath(%q) = %v, want %v", p, got, want)
		}
	}
}
