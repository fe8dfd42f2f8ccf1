package archive

import (
	"archive/tar"
	"io"
	"path"
)

// VisibleFunc reports whether a path of the lower layer (relative to the mount root) is still
// there in the merged tree after the run. ReadBackUpper asks it about at most one entry per
// directory the run changed, to tell an opaque directory (removed and made again by the run:
// nothing of the lower layer shows through it) from one that merely holds changes.
type VisibleFunc func(rel string) (bool, error)

// ReadBackUpper reads the archive of the upper directory of an overlay whose lower layer holds
// exactly man (what the host sent) and makes the same plan ReadBack makes from the whole merged
// tree: an entry of the upper directory is what the run made of that path; a whiteout (a
// character device 0/0, or a hard link to one) removed the path and everything below it; a
// directory or other entry of the upper directory hides what the lower layer has below it when
// it replaced something of another kind or is opaque (visible says which); every other path of
// man is unchanged. The entries are checked against the same rules and limits as ReadBack's, in
// the same order, so a refused archive has staged at most lim.Staged.
func ReadBackUpper(r io.Reader, base string, man Manifest, skip SkipFunc, stage *Stage, lim Limits, visible VisibleFunc) (*Plan, error) {
	rd := newReader(man, skip, stage, lim)
	rd.upper = true
	if err := rd.readAll(r, base); err != nil {
		return nil, err
	}
	hidden, err := rd.hiding(visible)
	if err != nil {
		return nil, err
	}
	for rel := range man {
		k, inUpper := rd.seen[rel]
		switch {
		case k == 'w':
			rd.plan.deletes = append(rd.plan.deletes, rel)
		case !inUpper && below(rel, hidden):
			rd.plan.deletes = append(rd.plan.deletes, rel)
		}
	}
	return rd.plan, nil
}

// hiding returns the paths of the upper directory below which nothing of the lower layer shows:
// whiteouts, entries that are not directories, and opaque directories.
func (rd *reader) hiding(visible VisibleFunc) (map[string]bool, error) {
	hidden := map[string]bool{}
	for rel, k := range rd.seen {
		if k != 'd' {
			hidden[rel] = true
		}
	}
	// One lower child per directory of both layers, absent from the upper one: it shows in the
	// merged tree exactly when the directory is not opaque.
	probe := map[string]string{}
	for rel := range rd.man {
		dir := path.Dir(rel)
		if dir == "." || probe[dir] != "" || rd.seen[dir] != 'd' || rd.man[dir].kind != 'd' {
			continue
		}
		if _, inUpper := rd.seen[rel]; !inUpper {
			probe[dir] = rel
		}
	}
	for dir, child := range probe {
		ok, err := visible(child)
		if err != nil {
			return nil, err
		}
		if !ok {
			hidden[dir] = true
		}
	}
	return hidden, nil
}

// below reports whether a proper parent of rel is in set.
func below(rel string, set map[string]bool) bool {
	for dir := path.Dir(rel); dir != "."; dir = path.Dir(dir) {
		if set[dir] {
			return true
		}
	}
	return false
}

// linkTarget is a hard link's target as a path relative to the mount root ("" when it is not
// one).
func (rd *reader) linkTarget(hdr *tar.Header) string {
	t, err := relName(hdr.Linkname, rd.prefix)
	if err != nil {
		return ""
	}
	return t
}
