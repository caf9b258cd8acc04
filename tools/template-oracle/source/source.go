// Package source mirrors Flux's commit-message rendering (internal/source): the TemplateData type,
// the default message, the template name, Sprig's hermetic functions and the error wording.
package source

import (
	"bytes"
	"fmt"
	"strings"
	"text/template"

	sprig "github.com/Masterminds/sprig"

	"oracle/supplychain"
	"oracle/types"
	"oracle/update"
)

// TemplateData is what a commit message template sees.
type TemplateData struct {
	AutomationObject types.NamespacedName
	Changed          update.Result
	Values           map[string]string
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

const defaultMessage = "Update from image update automation"

const see = "See: https://fluxcd.io/flux/components/image/imageupdateautomations/#message-template"

// Render renders a message template the way Flux does and returns its output or Flux's error text.
func Render(text string, data TemplateData) (string, error) {
	if text == "" {
		text = defaultMessage
	}
	t, err := template.New("commit message").Funcs(sprig.HermeticTxtFuncMap()).Parse(text)
	if err != nil {
		return "", fmt.Errorf("unable to create commit message template from spec: %w", err)
	}
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		msg := err.Error()
		switch {
		case strings.Contains(msg, "can't evaluate field Updated in type source.TemplateData"):
			return "", fmt.Errorf("template uses removed '.Updated' field. Please use '.Changed' instead. %s", see)
		case strings.Contains(msg, "can't evaluate field ImageResult in type update.Result"):
			return "", fmt.Errorf("template uses removed '.Changed.ImageResult' field. Please use '.Changed.FileChanges' or '.Changed.Objects' instead. %s", see)
		}
		return "", fmt.Errorf("failed to run template from spec: %w", err)
	}
	return b.String(), nil
}
