// Package source mirrors Flux's commit-message rendering (internal/source): the TemplateData type,
// the default message, the template name, Sprig's hermetic functions and the error wording.
package source

import (
	"bytes"
	"fmt"
	"strings"
	"text/template"

	sprig "github.com/Masterminds/sprig"

	"oracle/types"
	"oracle/update"
)

// TemplateData is what a commit message template sees.
type TemplateData struct {
	AutomationObject types.NamespacedName
	Changed          update.Result
	Values           map[string]string
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
