// Package argocd mirrors Argo CD Image Updater's commit-message and write-branch rendering
// (pkg/argocd/git.go): plain text/template with no function map, over struct types declared in a
// package named argocd, so that type names and error texts come out as Argo's.
package argocd

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"text/template"
)

// Change is one image change of the test data.
type Change struct {
	Image  string            `json:"image"`
	Alias  string            `json:"alias"`
	OldTag string            `json:"oldTag"`
	NewTag string            `json:"newTag"`
	Labels map[string]string `json:"labels"`
}

// Data is what one case renders over.
type Data struct {
	AppName      string   `json:"appName"`
	AppNamespace string   `json:"appNamespace"`
	TargetKey    string   `json:"targetKey"`
	Changes      []Change `json:"changes"`
}

type commitMessageChange struct {
	Image  string
	OldTag string
	NewTag string
	Labels map[string]string
}

type commitMessageTemplate struct {
	AppName    string
	AppChanges []commitMessageChange
}

type imageChange struct {
	Name   string
	Alias  string
	OldTag string
	NewTag string
}

type branchNameTemplate struct {
	AppNamespace string
	AppName      string
	TargetKey    string
	Images       []imageChange
	SHA256       string
}

// Commit renders a commit message: a parse error is returned as the error; an execution error
// gives Argo's fallback message and the error.
func Commit(text string, d Data) (string, error, error) {
	tpl, err := template.New("commitMessage").Parse(text)
	if err != nil {
		return "", err, nil
	}
	changes := make([]commitMessageChange, 0)
	for _, c := range d.Changes {
		labels := c.Labels
		if labels == nil {
			labels = map[string]string{}
		}
		changes = append(changes, commitMessageChange{c.Image, c.OldTag, c.NewTag, labels})
	}
	var b bytes.Buffer
	if err := tpl.Execute(&b, commitMessageTemplate{AppName: d.AppName, AppChanges: changes}); err != nil {
		return "build: update of application " + d.AppName, nil, err
	}
	return b.String(), nil, nil
}

// Branch renders a write-branch name, cut to 255 bytes.
func Branch(text string, d Data) (string, error) {
	tpl, err := template.New("branchName").Parse(text)
	if err != nil {
		return "", err
	}
	hasher := sha256.New()
	changes := make([]imageChange, 0)
	for _, c := range d.Changes {
		changes = append(changes, imageChange{c.Image, c.Alias, c.OldTag, c.NewTag})
		hasher.Write([]byte(fmt.Sprintf("%v-%v-%v,", c.Image, c.OldTag, c.NewTag)))
	}
	var b bytes.Buffer
	err = tpl.Execute(&b, branchNameTemplate{
		AppNamespace: d.AppNamespace,
		AppName:      d.AppName,
		TargetKey:    d.TargetKey,
		Images:       changes,
		SHA256:       hex.EncodeToString(hasher.Sum(nil)),
	})
	if err != nil {
		return "", err
	}
	out := b.String()
	if len(out) > 255 {
		out = out[:255]
	}
	return out, nil
}
