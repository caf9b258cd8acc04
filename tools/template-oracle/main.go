// Command template-oracle renders commit message templates with real Go text/template and Sprig,
// over Flux's types, to produce the expectations of crates/template's differential suite.
//
// Usage: template-oracle CASES_DIR REPORTS_DIR OUT_DIR [CASE...]
// For every case CASE.tmpl and report NAME.json it writes OUT_DIR/CASE__NAME.out (the message) or
// OUT_DIR/CASE__NAME.err (Flux's error text). With CASE arguments, only those cases are rendered.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"oracle/argocd"
	"oracle/source"
	"oracle/supplychain"
	"oracle/types"
	"oracle/update"
	v0 "oracle/v0/update"
	"oracle/yaml"
)

type report struct {
	AutomationObject struct {
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"automationObject"`
	Values           map[string]string `json:"values"`
	ObservedPolicies map[string]*struct {
		Name   string `json:"name"`
		Tag    string `json:"tag"`
		Digest string `json:"digest"`
	} `json:"observedPolicies"`
	FileChanges map[string][]struct {
		Object struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Name       string `json:"name"`
			Namespace  string `json:"namespace"`
		} `json:"object"`
		Changes []struct {
			OldValue string `json:"oldValue"`
			NewValue string `json:"newValue"`
			Setter   string `json:"setter"`
		} `json:"changes"`
	} `json:"fileChanges"`
	SupplyChain map[string]struct {
		Image    string `json:"image"`
		SignedBy []struct {
			Kind           string `json:"kind"`
			Name           string `json:"name"`
			Fingerprint    string `json:"fingerprint"`
			Subject        string `json:"subject"`
			Issuer         string `json:"issuer"`
			LogIndex       int64  `json:"logIndex"`
			IntegratedTime string `json:"integratedTime"`
		} `json:"signedBy"`
		Released *struct {
			At                string `json:"at"`
			Source            string `json:"source"`
			BuilderControlled bool   `json:"builderControlled"`
		} `json:"released"`
		Alias       string `json:"alias"`
		AliasDigest string `json:"aliasDigest"`
		Skipped     []struct {
			Tag    string `json:"tag"`
			Kind   string `json:"kind"`
			Reason string `json:"reason"`
		} `json:"skipped"`
	} `json:"supplyChain"`
}

// imageParts splits NAME:TAG@DIGEST into its tag and digest.
func imageParts(image string) (string, string) {
	name, digest := image, ""
	if i := strings.Index(image, "@"); i >= 0 {
		name, digest = image[:i], image[i+1:]
	}
	slash := strings.LastIndex(name, "/") + 1
	tag := ""
	if i := strings.LastIndex(name[slash:], ":"); i >= 0 {
		tag = name[slash+i+1:]
	}
	return tag, digest
}

// supplyChain gives the report's supplyChain in policy order.
func supplyChain(r report) []supplychain.Image {
	policies := make([]string, 0, len(r.SupplyChain))
	for p := range r.SupplyChain {
		policies = append(policies, p)
	}
	sort.Strings(policies)
	var out []supplychain.Image
	for _, p := range policies {
		e := r.SupplyChain[p]
		tag, digest := imageParts(e.Image)
		img := supplychain.Image{Policy: p, Image: e.Image, Tag: tag, Digest: digest, Alias: e.Alias, AliasDigest: e.AliasDigest}
		for _, s := range e.SignedBy {
			img.SignedBy = append(img.SignedBy, supplychain.Signer{Kind: s.Kind, Name: s.Name, Fingerprint: s.Fingerprint,
				Subject: s.Subject, Issuer: s.Issuer, LogIndex: s.LogIndex, IntegratedTime: s.IntegratedTime})
		}
		if e.Released != nil {
			img.Released, img.ReleaseSource, img.BuilderControlled = e.Released.At, e.Released.Source, e.Released.BuilderControlled
		}
		for _, k := range e.Skipped {
			img.Skipped = append(img.Skipped, supplychain.Skipped{Tag: k.Tag, Kind: k.Kind, Reason: k.Reason})
		}
		out = append(out, img)
	}
	return out
}

func load(path string) (source.TemplateData, error) {
	var r report
	b, err := os.ReadFile(path)
	if err != nil {
		return source.TemplateData{}, err
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return source.TemplateData{}, fmt.Errorf("%s: %w", path, err)
	}
	v0.Policies = map[string]string{}
	for key, p := range r.ObservedPolicies {
		if p == nil {
			continue
		}
		image := p.Name
		if p.Tag != "" {
			image += ":" + p.Tag
		}
		if p.Digest != "" {
			image += "@" + p.Digest
		}
		v0.Policies[key] = image
	}
	source.SetSupplyChain(supplyChain(r))
	data := source.TemplateData{
		AutomationObject: types.NamespacedName{Namespace: r.AutomationObject.Namespace, Name: r.AutomationObject.Name},
		Values:           r.Values,
	}
	files := make([]string, 0, len(r.FileChanges))
	for f := range r.FileChanges {
		files = append(files, f)
	}
	sort.Strings(files)
	for _, f := range files {
		for _, e := range r.FileChanges[f] {
			id := update.ObjectIdentifier{ResourceIdentifier: yaml.ResourceIdentifier{
				TypeMeta: yaml.TypeMeta{APIVersion: e.Object.APIVersion, Kind: e.Object.Kind},
				NameMeta: yaml.NameMeta{Name: e.Object.Name, Namespace: e.Object.Namespace},
			}}
			var changes []update.Change
			for _, c := range e.Changes {
				changes = append(changes, update.Change{OldValue: c.OldValue, NewValue: c.NewValue, Setter: c.Setter})
			}
			data.Changed.AddChange(f, id, changes...)
		}
	}
	return data, nil
}

// argocdMain renders Argo CD Image Updater's templates: every CASES_DIR/commit-*.tmpl and
// branch-*.tmpl over every DATA_DIR/*.json, into OUT_DIR/CASE__DATA.out (the message or branch) and
// OUT_DIR/CASE__DATA.err (the error: parse errors alone, execution errors of a commit message beside
// its fallback message).
func argocdMain(args []string) {
	if len(args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: template-oracle argocd CASES_DIR DATA_DIR OUT_DIR")
		os.Exit(2)
	}
	cases, _ := filepath.Glob(filepath.Join(args[0], "*.tmpl"))
	datas, _ := filepath.Glob(filepath.Join(args[1], "*.json"))
	sort.Strings(cases)
	sort.Strings(datas)
	write := func(path, text string) {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	for _, c := range cases {
		name := strings.TrimSuffix(filepath.Base(c), ".tmpl")
		text, err := os.ReadFile(c)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		for _, d := range datas {
			raw, err := os.ReadFile(d)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			var data argocd.Data
			if err := json.Unmarshal(raw, &data); err != nil {
				fmt.Fprintln(os.Stderr, d, err)
				os.Exit(1)
			}
			base := filepath.Join(args[2], name+"__"+strings.TrimSuffix(filepath.Base(d), ".json"))
			switch {
			case strings.HasPrefix(name, "commit-"):
				out, parseErr, execErr := argocd.Commit(string(text), data)
				if parseErr != nil {
					write(base+".err", parseErr.Error())
					continue
				}
				write(base+".out", out)
				if execErr != nil {
					write(base+".err", execErr.Error())
				}
			case strings.HasPrefix(name, "branch-"):
				out, err := argocd.Branch(string(text), data)
				if err != nil {
					write(base+".err", err.Error())
				} else {
					write(base+".out", out)
				}
			}
		}
	}
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "argocd" {
		argocdMain(os.Args[2:])
		return
	}
	if len(os.Args) < 4 {
		fmt.Fprintln(os.Stderr, "usage: template-oracle CASES_DIR REPORTS_DIR OUT_DIR [CASE...]")
		os.Exit(2)
	}
	casesDir, reportsDir, outDir := os.Args[1], os.Args[2], os.Args[3]
	only := map[string]bool{}
	for _, c := range os.Args[4:] {
		only[c] = true
	}
	cases, _ := filepath.Glob(filepath.Join(casesDir, "*.tmpl"))
	reports, _ := filepath.Glob(filepath.Join(reportsDir, "*.json"))
	sort.Strings(cases)
	sort.Strings(reports)
	for _, c := range cases {
		name := strings.TrimSuffix(filepath.Base(c), ".tmpl")
		if len(only) > 0 && !only[name] {
			continue
		}
		text, err := os.ReadFile(c)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		for _, r := range reports {
			rname := strings.TrimSuffix(filepath.Base(r), ".json")
			data, err := load(r)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			out, err := source.Render(string(text), data)
			base := filepath.Join(outDir, name+"__"+rname)
			if err != nil {
				err = os.WriteFile(base+".err", []byte(err.Error()), 0o644)
			} else {
				err = os.WriteFile(base+".out", []byte(out), 0o644)
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
		}
	}
}
