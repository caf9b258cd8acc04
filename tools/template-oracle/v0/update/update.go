// Package update mirrors the result types of Flux's image-automation-controller v0.x pkg/update
// (v0.41): Result (file -> object -> image references) with its Images and Objects methods, and
// ImageRef, the parsed latest image of a policy. Flux v1 removed them from the template data;
// image-update still gives them to templates as `.Updated` and `.Changed.ImageResult`.
package update

import (
	"fmt"
	"sort"
	"strings"

	"oracle/name"
	"oracle/types"
	"oracle/yaml"
)

// ObjectIdentifier identifies the object a change was made in (the same type in Flux v0.x and v1).
type ObjectIdentifier struct {
	yaml.ResourceIdentifier
}

// ImageRef is the image reference a change used.
type ImageRef interface {
	String() string
	Identifier() string
	Repository() string
	Registry() string
	Name() string
	Policy() types.NamespacedName
}

type imageRef struct {
	name.Reference
	policy types.NamespacedName
}

// Policy gives the policy whose image this is.
func (i imageRef) Policy() types.NamespacedName { return i.policy }

// Repository gives the repository path.
func (i imageRef) Repository() string { return i.Context().RepositoryStr() }

// Registry gives the registry host.
func (i imageRef) Registry() string { return i.Context().Registry.String() }

// Result holds the image references by file and object.
type Result struct {
	Files map[string]FileResult
}

// FileResult holds the image references of the objects of one file.
type FileResult struct {
	Objects map[ObjectIdentifier][]ImageRef
}

// Less is Go's map key order for ObjectIdentifier (fields in order).
func Less(a, b ObjectIdentifier) bool {
	x := []string{a.APIVersion, a.Kind, a.Name, a.Namespace}
	y := []string{b.APIVersion, b.Kind, b.Name, b.Namespace}
	for i := range x {
		if x[i] != y[i] {
			return x[i] < y[i]
		}
	}
	return false
}

func (r Result) sortedFiles() []string {
	files := make([]string, 0, len(r.Files))
	for f := range r.Files {
		files = append(files, f)
	}
	sort.Strings(files)
	return files
}

func sortedIDs(m map[ObjectIdentifier][]ImageRef) []ObjectIdentifier {
	ids := make([]ObjectIdentifier, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return Less(ids[i], ids[j]) })
	return ids
}

// Images gives every image reference once. Flux ranged over its maps (Go's random order); here
// files go by path and objects in key order.
func (r Result) Images() []ImageRef {
	seen := map[ImageRef]bool{}
	var out []ImageRef
	for _, f := range r.sortedFiles() {
		objs := r.Files[f].Objects
		for _, id := range sortedIDs(objs) {
			for _, ref := range objs[id] {
				if !seen[ref] {
					seen[ref] = true
					out = append(out, ref)
				}
			}
		}
	}
	return out
}

// Objects gives the image references by object across files (file by file, by path).
func (r Result) Objects() map[ObjectIdentifier][]ImageRef {
	out := make(map[ObjectIdentifier][]ImageRef)
	for _, f := range r.sortedFiles() {
		for id, refs := range r.Files[f].Objects {
			out[id] = append(out[id], refs...)
		}
	}
	return out
}

// Change is one recorded change, as the builder needs it.
type Change struct {
	File     string
	ID       ObjectIdentifier
	Setter   string
	NewValue string
}

// Policies holds the latest image of each policy, NAMESPACE:NAME -> image (the report's
// observedPolicies); the oracle sets it before rendering.
var Policies = map[string]string{}

// setterPolicy gives the policy key of a whole-image setter (NS:NAME); partial setters
// (NS:NAME:tag, :name, :digest) were not recorded.
func setterPolicy(setter string) (key string, ok bool) {
	parts := strings.SplitN(setter, ":", 3)
	if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
		return "", false
	}
	return setter, true
}

// Build records, for every change of a whole-image setter in order (files by path, objects in key
// order), the latest image of the setter's policy, once per object, as the design of Flux's
// ResultV2 describes it ("partial image updates (name or tag) are not recorded in the result";
// Flux's v0.x code recorded them too).
func Build(changes []Change) (Result, error) {
	result := Result{Files: map[string]FileResult{}}
	refs := map[string]imageRef{}
	for _, c := range changes {
		key, ok := setterPolicy(c.Setter)
		if !ok {
			continue
		}
		image, found := Policies[key]
		if !found {
			image = c.NewValue
		}
		ref, done := refs[key+"="+image]
		if !done {
			parsed, err := name.ParseReference(image)
			if err != nil {
				return Result{}, fmt.Errorf("encountered invalid image ref %q: %w", image, err)
			}
			ns, n, _ := strings.Cut(key, ":")
			ref = imageRef{Reference: parsed, policy: types.NamespacedName{Namespace: ns, Name: n}}
			refs[key+"="+image] = ref
		}
		fr, ok := result.Files[c.File]
		if !ok {
			fr = FileResult{Objects: map[ObjectIdentifier][]ImageRef{}}
			result.Files[c.File] = fr
		}
		list := fr.Objects[c.ID]
		present := false
		for _, x := range list {
			if x == ImageRef(ref) {
				present = true
			}
		}
		if !present {
			fr.Objects[c.ID] = append(list, ref)
		}
	}
	return result, nil
}
