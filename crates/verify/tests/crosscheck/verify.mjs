// The independent verdict for crates/verify/tests/gate.rs: each case is a
// Sigstore bundle (legacy cosign layers turned into v0.1 bundles), the
// artifact when the bundle signs one, the manifest digest it must be about,
// and the required signer. Sigstore's own checks are @sigstore/verify's;
// the digest binding, which is cosign's rule rather than Sigstore's, is the
// few lines below. Prints one JSON line per case: {name, ok, reason}.
import { readFileSync } from 'node:fs';
import { createHash, createPublicKey, verify as nodeVerify } from 'node:crypto';
import { Verifier, toSignedEntity, toTrustMaterial } from '@sigstore/verify';
import { bundleFromJSON } from '@sigstore/bundle';
import { TrustedRoot } from '@sigstore/protobuf-specs';

const COSIGN_SIGN = 'https://sigstore.dev/cosign/sign/v1';
const cases = JSON.parse(readFileSync(process.argv[2], 'utf8'));

function pemToDer(pem) {
  const body = pem.split('\n').filter((l) => l && !l.startsWith('-----')).join('');
  return Buffer.from(body, 'base64');
}

function binding(c, bundle, artifact) {
  const digest = c.digest;
  if (bundle.dsseEnvelope) {
    const st = JSON.parse(Buffer.from(bundle.dsseEnvelope.payload, 'base64').toString('utf8'));
    if (st.predicateType !== COSIGN_SIGN) throw new Error(`predicate type ${st.predicateType}`);
    const hex = digest.replace(/^sha256:/, '');
    if (!(st.subject || []).some((s) => s.digest && s.digest.sha256 === hex)) {
      throw new Error('statement about another image');
    }
    return;
  }
  // A message signature: the artifact is either the manifest itself or a
  // simple-signing payload naming it.
  const sha = 'sha256:' + createHash('sha256').update(artifact).digest('hex');
  if (sha === digest) return;
  let payload;
  try {
    payload = JSON.parse(artifact.toString('utf8'));
  } catch {
    throw new Error('artifact is another image');
  }
  if (payload?.critical?.image?.['docker-manifest-digest'] !== digest) {
    throw new Error('payload names another image');
  }
}

for (const c of cases) {
  let ok = false;
  let reason = '';
  try {
    const bundle = bundleFromJSON(c.bundle);
    const root = TrustedRoot.fromJSON(c.trustedRoot);
    let keys;
    if (c.key) {
      const hint = c.bundle.verificationMaterial.publicKey.hint;
      keys = { [hint]: { rawBytes: pemToDer(c.key) } };
    }
    // Sigstore verifies a message signature over a digest, which Ed25519
    // (pure, as cosign uses it) cannot do: such a legacy key signature is
    // checked with node's own Ed25519 instead.
    if (c.key && c.artifact && !c.bundle.verificationMaterial.tlogEntries.length) {
      const key = createPublicKey({ key: pemToDer(c.key), format: 'der', type: 'spki' });
      if (key.asymmetricKeyType === 'ed25519') {
        const sig = Buffer.from(c.bundle.messageSignature.signature, 'base64');
        if (!nodeVerify(null, Buffer.from(c.artifact, 'base64'), key, sig)) {
          throw new Error('Ed25519 signature verification failed');
        }
        binding(c, c.bundle, Buffer.from(c.artifact, 'base64'));
        process.stdout.write(JSON.stringify({ name: c.name, ok: true, reason: '' }) + '\n');
        continue;
      }
    }
    const material = toTrustMaterial(root, keys);
    const keyed = Boolean(c.key);
    const hasTlog = (c.bundle.verificationMaterial.tlogEntries || []).length > 0;
    const verifier = new Verifier(material, {
      ctlogThreshold: 0,
      tlogThreshold: keyed && !hasTlog ? 0 : 1,
      timestampThreshold: keyed && !hasTlog ? 0 : 1,
    });
    const artifact = c.artifact ? Buffer.from(c.artifact, 'base64') : undefined;
    const entity = toSignedEntity(bundle, artifact);
    const policy = c.identity
      ? { subjectAlternativeName: c.identity.subject, extensions: { issuer: c.identity.issuer } }
      : undefined;
    verifier.verify(entity, policy);
    binding(c, c.bundle, artifact);
    ok = true;
  } catch (e) {
    reason = `${e.code || ''} ${e.message}`.trim();
  }
  process.stdout.write(JSON.stringify({ name: c.name, ok, reason }) + '\n');
}
