// Package update mirrors the result types of Flux's image-automation-controller internal/update
// package: the names and shapes templates see.
package update

import (
	"sort"

	v0 "oracle/v0/update"
)

// ObjectIdentifier identifies the object a change was made in (Flux v0.x's type, unchanged in v1).
type ObjectIdentifier = v0.ObjectIdentifier

// Change is one field change.
type Change struct {
	OldValue string
	NewValue string
	Setter   string
}

// ObjectChanges holds the changes by object.
type ObjectChanges map[ObjectIdentifier][]Change

// Result holds the changes by file.
type Result struct {
	FileChanges map[string]ObjectChanges
}

// AddChange appends changes to an object in a file.
func (r *Result) AddChange(file string, id ObjectIdentifier, changes ...Change) {
	if r.FileChanges == nil {
		r.FileChanges = map[string]ObjectChanges{}
	}
	if _, ok := r.FileChanges[file]; !ok {
		r.FileChanges[file] = ObjectChanges{}
	}
	r.FileChanges[file][id] = append(r.FileChanges[file][id], changes...)
}

// sortedFiles gives the file paths in order.
func (r Result) sortedFiles() []string {
	files := make([]string, 0, len(r.FileChanges))
	for f := range r.FileChanges {
		files = append(files, f)
	}
	sort.Strings(files)
	return files
}

// sortedIDs gives the objects of a file in Go's key order.
func sortedIDs(objs ObjectChanges) []ObjectIdentifier {
	ids := make([]ObjectIdentifier, 0, len(objs))
	for id := range objs {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return v0.Less(ids[i], ids[j]) })
	return ids
}

// Changes gives every change once, first seen. Flux walks its maps in Go's random order; the oracle
// walks files and objects sorted so that expectations are stable.
func (r Result) Changes() []Change {
	seen := map[Change]bool{}
	var out []Change
	for _, f := range r.sortedFiles() {
		objs := r.FileChanges[f]
		for _, id := range sortedIDs(objs) {
			for _, c := range objs[id] {
				if !seen[c] {
					seen[c] = true
					out = append(out, c)
				}
			}
		}
	}
	return out
}

// Objects merges the objects of all files, concatenating change lists in file order.
func (r Result) Objects() ObjectChanges {
	out := make(ObjectChanges)
	for _, f := range r.sortedFiles() {
		for id, c := range r.FileChanges[f] {
			out[id] = append(out[id], c...)
		}
	}
	return out
}

// ImageResult gives Flux v0.x's image result of these changes (`.Changed.ImageResult`, which Flux
// v1 removed and image-update keeps): built from the changes, files by path and objects in key
// order. The latest images come from v0.Policies. A latest image that does not parse panics: the
// oracle's Render builds the result first and reports that case as image-update does.
func (r Result) ImageResult() v0.Result {
	res, err := v0.Build(r.Flatten())
	if err != nil {
		panic(err)
	}
	return res
}

// Flatten lists the changes in the order ImageResult reads them.
func (r Result) Flatten() []v0.Change {
	var out []v0.Change
	for _, f := range r.sortedFiles() {
		objs := r.FileChanges[f]
		for _, id := range sortedIDs(objs) {
			for _, c := range objs[id] {
				out = append(out, v0.Change{File: f, ID: id, Setter: c.Setter, NewValue: c.NewValue})
			}
		}
	}
	return out
}
