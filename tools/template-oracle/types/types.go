// Package types mirrors k8s.io/apimachinery/pkg/types.NamespacedName, so that type names in template
// errors read as in Flux.
package types

// NamespacedName is the namespace and name of an object.
type NamespacedName struct {
	Namespace string
	Name      string
}

// String gives namespace/name.
func (n NamespacedName) String() string {
	return n.Namespace + "/" + n.Name
}

// MarshalLog gives the name and namespace for structured logs (apimachinery v0.33).
func (n NamespacedName) MarshalLog() interface{} {
	return struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace,omitempty"`
	}{
		Name:      n.Name,
		Namespace: n.Namespace,
	}
}
