// Package supplychain mirrors image-update's addition to the commit-message data: what the
// supply-chain gate found about each image a commit writes (crates/template/src/supply_chain.rs).
package supplychain

import "fmt"

// Signer is one signer of a chosen image: a key or a keyless identity.
type Signer struct {
	Kind           string
	Name           string
	Fingerprint    string
	Subject        string
	Issuer         string
	LogIndex       int64
	IntegratedTime string
}

// String names the signer as image-update's other outputs do.
func (s Signer) String() string {
	if s.Kind == "key" {
		return fmt.Sprintf("key %s (%s)", s.Name, s.Fingerprint)
	}
	return fmt.Sprintf("%s (issuer %s; transparency log index %d, %s)", s.Subject, s.Issuer, s.LogIndex, s.IntegratedTime)
}

// Skipped is a better candidate the gate passed over.
type Skipped struct {
	Tag    string
	Kind   string
	Reason string
}

// Image is what the gate found about one policy's chosen image.
type Image struct {
	Policy            string
	Image             string
	Tag               string
	Digest            string
	SignedBy          []Signer
	Released          string
	ReleaseSource     string
	BuilderControlled bool
	Alias             string
	AliasDigest       string
	Skipped           []Skipped
}
