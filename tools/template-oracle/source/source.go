// Package source mirrors Flux's commit-message rendering (internal/source): the TemplateData type,
// the default message, the template name, Sprig's hermetic functions and the error wording.
package source

import (
	"bytes"
	"fmt"
	"strings"
	"text/template"
	"text/template/parse"

	sprig "github.com/Masterminds/sprig"

	"oracle/supplychain"
	"oracle/types"
	"oracle/update"
	v0 "oracle/v0/update"
)

// TemplateData is what a commit message template sees.
type TemplateData struct {
	AutomationObject types.NamespacedName
	Changed          update.Result
	Values           map[string]string
}

// Updated gives Flux v0.x's image result (`.Updated`, which Flux v1 removed and image-update keeps,
// as a method so that what Flux v1 templates print is unchanged).
func (d TemplateData) Updated() v0.Result {
	return d.Changed.ImageResult()
}

// findings holds what the supply-chain gate found, by policy order, outside TemplateData so that
// printing the data stays as Flux prints it (image-update keeps it as hidden data of the value).
var findings []supplychain.Image

// SetSupplyChain sets the findings the next Render sees.
func SetSupplyChain(images []supplychain.Image) {
	findings = images
}

// SupplyChain gives the findings of the policies whose setters made a change (image-update's
// addition to Flux's data).
func (d TemplateData) SupplyChain() []supplychain.Image {
	changed := map[string]bool{}
	for _, c := range d.Changed.Changes() {
		policy := c.Setter
		if i := strings.Index(policy, ":"); i >= 0 {
			if j := strings.Index(policy[i+1:], ":"); j >= 0 {
				policy = policy[:i+1+j]
			}
		}
		changed[policy] = true
	}
	var out []supplychain.Image
	for _, f := range findings {
		if changed[f.Policy] {
			out = append(out, f)
		}
	}
	return out
}

// usesField says whether a field named name appears anywhere in the parsed templates.
func usesField(t *template.Template, name string) bool {
	found := false
	var walk func(n parse.Node)
	walk = func(n parse.Node) {
		switch n := n.(type) {
		case *parse.ListNode:
			if n == nil {
				return
			}
			for _, c := range n.Nodes {
				walk(c)
			}
		case *parse.ActionNode:
			walk(n.Pipe)
		case *parse.IfNode:
			walk(n.Pipe)
			walk(n.List)
			walk(n.ElseList)
		case *parse.RangeNode:
			walk(n.Pipe)
			walk(n.List)
			walk(n.ElseList)
		case *parse.WithNode:
			walk(n.Pipe)
			walk(n.List)
			walk(n.ElseList)
		case *parse.TemplateNode:
			if n.Pipe != nil {
				walk(n.Pipe)
			}
		case *parse.PipeNode:
			if n == nil {
				return
			}
			for _, c := range n.Cmds {
				walk(c)
			}
		case *parse.CommandNode:
			for _, a := range n.Args {
				walk(a)
			}
		case *parse.FieldNode:
			for _, i := range n.Ident {
				found = found || i == name
			}
		case *parse.VariableNode:
			for _, i := range n.Ident[1:] {
				found = found || i == name
			}
		case *parse.ChainNode:
			walk(n.Node)
			for _, f := range n.Field {
				found = found || f == name
			}
		}
	}
	for _, tt := range t.Templates() {
		if tt.Tree != nil {
			walk(tt.Tree.Root)
		}
	}
	return found
}

const defaultMessage = "Update from image update automation"

// Render renders a message template the way Flux does and returns its output or Flux's error text.
func Render(text string, data TemplateData) (string, error) {
	if text == "" {
		text = defaultMessage
	}
	t, err := template.New("commit message").Funcs(sprig.HermeticTxtFuncMap()).Parse(text)
	if err != nil {
		return "", fmt.Errorf("unable to create commit message template from spec: %w", err)
	}
	// image-update builds Flux v0.x's result before running a template that can reach it, and
	// fails there on a latest image that does not parse.
	if usesField(t, "Updated") || usesField(t, "ImageResult") {
		if _, err := v0.Build(data.Changed.Flatten()); err != nil {
			return "", err
		}
	}
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return "", fmt.Errorf("failed to run template from spec: %w", err)
	}
	return b.String(), nil
}
