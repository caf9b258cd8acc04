// Package yaml mirrors the kyaml types Flux's ObjectIdentifier embeds (sigs.k8s.io/kustomize/kyaml/yaml),
// with the same fields, embedding, json tags and pointer-receiver getters.
package yaml

// TypeMeta is apiVersion and kind.
type TypeMeta struct {
	APIVersion string `json:"apiVersion,omitempty" yaml:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty" yaml:"kind,omitempty"`
}

// NameMeta is name and namespace.
type NameMeta struct {
	Name      string `json:"name,omitempty" yaml:"name,omitempty"`
	Namespace string `json:"namespace,omitempty" yaml:"namespace,omitempty"`
}

// ResourceIdentifier identifies a resource.
type ResourceIdentifier struct {
	TypeMeta `json:",inline" yaml:",inline"`
	NameMeta `json:",inline" yaml:",inline"`
}

// GetName gives the name.
func (r *ResourceIdentifier) GetName() string { return r.Name }

// GetNamespace gives the namespace.
func (r *ResourceIdentifier) GetNamespace() string { return r.Namespace }

// GetAPIVersion gives the apiVersion.
func (r *ResourceIdentifier) GetAPIVersion() string { return r.APIVersion }

// GetKind gives the kind.
func (r *ResourceIdentifier) GetKind() string { return r.Kind }
