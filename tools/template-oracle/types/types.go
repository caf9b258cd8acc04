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
