#!/usr/bin/env python3
"""Generate the inputs of BENCHMARKS.md's "Quadratic inputs" section under DIR.

    scripts/quadratic-inputs.py DIR

DIR/crd-names, crd-labels, crd-rest (and -10k: at the limit of 10,000 references):
2,000 Argo CD Applications, each with its kustomization, and an ImageUpdater whose first
applicationRefs entry selects them all, followed by 20,000 (9,999) entries that select none:
name patterns `other-NNNNN-*`, label selectors `team: none-NNNNN` with the pattern `*`, or
patterns `*xNNNNN*` that cannot be filed. DIR/crd-*/policies.args: the --policy arguments
(one a line) for every Application's image.

DIR/ksN (N = 1000, 2000, 4000, 10000, 20000, 40000, 100000): a KubeSphere ImageUpdater of N
images for the Application demo/demo, written back to git (tree/), and ImagePolicies with a
result for each (policies-NNN.yaml, 10,000 a file).
"""
import os
import sys


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def crd(d, refs, ref):
    apps = []
    for i in range(2000):
        apps.append(
            "apiVersion: argoproj.io/v1alpha1\nkind: Application\n"
            f"metadata: {{name: app-{i:05}, namespace: argocd, labels: {{team: team-{i:05}}}}}\n"
            "spec:\n  source: {repoURL: https://git.example.test/acme/deploy.git, "
            f"path: apps/app-{i:05}, targetRevision: main}}\n"
        )
        write(
            f"{d}/tree/apps/app-{i:05}/kustomization.yaml",
            "resources: [deployment.yaml]\nimages:\n- name: ghcr.io/acme/web\n  newTag: 1.0.0\n",
        )
    write(f"{d}/tree/applications.yaml", "---\n".join(apps))
    updater = (
        "apiVersion: argocd-image-updater.argoproj.io/v1alpha1\nkind: ImageUpdater\n"
        "metadata: {name: big, namespace: argocd}\nspec:\n"
        "  writeBackConfig: {method: git, gitConfig: {branch: main, writeBackTarget: kustomization}}\n"
        "  applicationRefs:\n"
        '  - namePattern: "app-*"\n    images:\n    - alias: web\n      imageName: ghcr.io/acme/web:^1\n'
    )
    write(f"{d}/tree/argocd/updater.yaml", updater + "".join(ref(i) for i in range(refs)))
    write(
        f"{d}/policies.args",
        "".join(f"--policy\nargocd:app-{i:05}/web=ghcr.io/acme/web:1.2.3\n" for i in range(2000)),
    )


def kubesphere(d, images):
    lines = [
        "apiVersion: gitops.kubesphere.io/v1alpha1\nkind: ImageUpdater\n"
        "metadata: {name: big, namespace: demo}\nspec:\n  kind: argocd\n  argocd:\n"
        "    app: {name: demo, namespace: demo}\n    write: git\n  images:\n"
    ]
    policies = []
    for i in range(images):
        lines.append(f"  - img{i:06}=registry.example.test/acme/image-{i:06}:^1\n")
        policies.append(
            f"- {{apiVersion: image.toolkit.fluxcd.io/v1, kind: ImagePolicy, metadata: {{name: img{i:06}, "
            f"namespace: demo}}, status: {{latestRef: {{name: registry.example.test/acme/image-{i:06}, tag: 1.2.3}}}}}}\n"
        )
    write(f"{d}/tree/kubesphere/updater.yaml", "".join(lines))
    write(
        f"{d}/tree/demo/application.yaml",
        "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: demo, namespace: demo}\n"
        "spec:\n  source: {repoURL: https://git.example.test/acme/deploy.git, path: demo, targetRevision: main}\n",
    )
    write(f"{d}/tree/demo/kustomization.yaml", "resources: [deployment.yaml]\n")
    # A List of 10,000 stays within the YAML reader's node budget of one document.
    for n in range(0, images, 10000):
        write(
            f"{d}/policies-{n // 10000:03}.yaml",
            "apiVersion: v1\nkind: List\nitems:\n" + "".join(policies[n : n + 10000]),
        )


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    forms = {
        "names": lambda i: f'  - namePattern: "other-{i:05}-*"\n    useAnnotations: true\n',
        "labels": lambda i: (
            '  - namePattern: "*"\n'
            f"    labelSelectors: {{matchLabels: {{team: none-{i:05}}}}}\n    useAnnotations: true\n"
        ),
        "rest": lambda i: f'  - namePattern: "*x{i:05}*"\n    useAnnotations: true\n',
    }
    for name, ref in forms.items():
        crd(f"{out}/crd-{name}", 20000, ref)
        crd(f"{out}/crd-{name}-10k", 9999, ref)
    for n in (1000, 2000, 4000, 10000, 20000, 40000, 100000):
        kubesphere(f"{out}/ks{n}", n)


if __name__ == "__main__":
    main()
