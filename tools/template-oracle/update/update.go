// Package update mirrors the result types of Flux's image-automation-controller internal/update
// package: the names and shapes templates see.
package update

import (
	"sort"

	"oracle/yaml"
)

// ObjectIdentifier identifies the object a change was made in.
type ObjectIdentifier struct {
	yaml.ResourceIdentifier
}

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

func less(a, b ObjectIdentifier) bool {
	x := []string{a.APIVersion, a.Kind, a.Name, a.Namespace}
	y := []string{b.APIVersion, b.Kind, b.Name, b.Namespace}
	for i := range x {
		if x[i] != y[i] {
			return x[i] < y[i]
		}
	}
	return false
}

// Changes gives every change once, first seen. Flux walks its maps in Go's random order; the oracle
// walks files and objects sorted so that expectations are stable.
func (r Result) Changes() []Change {
	files := make([]string, 0, len(r.FileChanges))
	for f := range r.FileChanges {
		files = append(files, f)
	}
	sort.Strings(files)
	seen := map[Change]bool{}
	var out []Change
	for _, f := range files {
		objs := r.FileChanges[f]
		ids := make([]ObjectIdentifier, 0, len(objs))
		for id := range objs {
			ids = append(ids, id)
		}
		sort.Slice(ids, func(i, j int) bool { return less(ids[i], ids[j]) })
		for _, id := range ids {
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
	files := make([]string, 0, len(r.FileChanges))
	for f := range r.FileChanges {
		files = append(files, f)
	}
	sort.Strings(files)
	out := make(ObjectChanges)
	for _, f := range files {
		for id, c := range r.FileChanges[f] {
			out[id] = append(out[id], c...)
		}
	}
	return out
}
